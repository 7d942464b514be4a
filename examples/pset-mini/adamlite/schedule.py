"""Linear warmup followed by cosine decay to a floor."""
import math


def warmup_cosine(step, total_steps, warmup_steps, peak_lr, min_lr=0.0):
    """Learning rate for 0-based `step`."""
    # <paper2code name="linear warmup">
    if step < warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    # </paper2code name="linear warmup">
    # <paper2code name="cosine decay">
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    progress = min(1.0, progress)  # stay at the floor after total_steps
    return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress))
    # </paper2code name="cosine decay">

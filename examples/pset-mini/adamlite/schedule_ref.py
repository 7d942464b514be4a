"""Reference warmup-cosine schedule."""
import math


def ref_warmup_cosine(step, total_steps, warmup_steps, peak_lr, min_lr=0.0):
    if step < warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    span = max(1, total_steps - warmup_steps)
    p = min(1.0, (step - warmup_steps) / span)
    return min_lr + (peak_lr - min_lr) * (1.0 + math.cos(math.pi * p)) / 2.0

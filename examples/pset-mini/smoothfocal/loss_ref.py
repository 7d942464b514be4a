"""Reference SmoothFocal implementation (direct transcription of the equations)."""
import math


def ref_probs(logits):
    top = max(logits)
    e = [math.exp(z - top) for z in logits]
    s = sum(e)
    return [x / s for x in e]


def ref_log_probs(logits):
    top = max(logits)
    lse = top + math.log(sum(math.exp(z - top) for z in logits))
    return [z - lse for z in logits]


def ref_targets(y, k, eps):
    return [(1.0 - eps) * (1.0 if c == y else 0.0) + eps / k for c in range(k)]


def ref_loss(logits, y, eps=0.1, gamma=2.0):
    lp = ref_log_probs(logits)
    q = ref_targets(y, len(logits), eps)
    return -sum(q[c] * (1.0 - math.exp(lp[c])) ** gamma * lp[c] for c in range(len(logits)))


def ref_batch_loss(batch, targets, eps=0.1, gamma=2.0, weights=None, ignore=-100):
    kept = [(z, y) for z, y in zip(batch, targets) if y != ignore]
    if not kept:
        return 0.0
    ws = [1.0 if weights is None else weights[y] for _, y in kept]
    num = sum(w * ref_loss(z, y, eps, gamma) for w, (z, y) in zip(ws, kept))
    return num / sum(ws)


def ref_grad(logits, y, eps=0.1):
    p = ref_probs(logits)
    q = ref_targets(y, len(logits), eps)
    return [a - b for a, b in zip(p, q)]

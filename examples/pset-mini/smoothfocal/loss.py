"""SmoothFocal loss in pure Python."""
import math

from defaults import DEFAULT_GAMMA, DEFAULT_SMOOTHING, IGNORE_INDEX
from numerics import logsumexp


# <paper2code name="log softmax">
def log_softmax(logits):
    lse = logsumexp(logits)
    return [z - lse for z in logits]
# </paper2code name="log softmax">


def smoothed_targets(target, num_classes, smoothing):
    """q_k = (1 - eps) * [k == y] + eps / K."""
    # <paper2code name="smoothed targets">
    q = [smoothing / num_classes] * num_classes
    q[target] += 1.0 - smoothing
    return q
    # </paper2code name="smoothed targets">


def focal_smooth_ce(logits, target, smoothing=DEFAULT_SMOOTHING, gamma=DEFAULT_GAMMA):
    logp = log_softmax(logits)
    q = smoothed_targets(target, len(logits), smoothing)
    # <paper2code name="focal modulation">
    loss = 0.0
    for qk, lp in zip(q, logp):
        pk = math.exp(lp)
        loss -= qk * (1.0 - pk) ** gamma * lp  # focal factor on every class term
    return loss
    # </paper2code name="focal modulation">


def batch_loss(batch_logits, targets, smoothing=DEFAULT_SMOOTHING, gamma=DEFAULT_GAMMA,
               class_weights=None, ignore_index=IGNORE_INDEX):
    # <paper2code name="weighted batch mean">
    total, norm = 0.0, 0.0
    for logits, y in zip(batch_logits, targets):
        # <paper2code name="skip ignored">
        if y == ignore_index:
            continue
        # </paper2code name="skip ignored">
        w = 1.0 if class_weights is None else class_weights[y]
        total += w * focal_smooth_ce(logits, y, smoothing, gamma)
        norm += w
    return total / norm if norm > 0 else 0.0
    # </paper2code name="weighted batch mean">


def smoothed_ce_grad(logits, target, smoothing=DEFAULT_SMOOTHING):
    """Gradient of the gamma = 0 loss with respect to the logits."""
    q = smoothed_targets(target, len(logits), smoothing)
    # <paper2code name="closed form gradient">
    return [math.exp(lp) - qk for lp, qk in zip(log_softmax(logits), q)]
    # </paper2code name="closed form gradient">

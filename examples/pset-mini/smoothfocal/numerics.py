"""Numerically stable helpers for SmoothFocal."""
import math


def logsumexp(values):
    """log(sum(exp(v))) computed without overflow."""
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))

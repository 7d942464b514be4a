"""TemperedAttn: length-aware temperature scaling with an attention sink."""
import math

from linalg_utils import dot, weighted_sum


def length_scale(n, n0):
    """s_n = max(1, ln n / ln n0)."""
    # <paper2code name="length scale">
    return max(1.0, math.log(n) / math.log(n0))
    # </paper2code name="length scale">


def sink_softmax(logits, sink_logit):
    """Softmax over `logits` plus one sink logit; returns only the real positions."""
    # <paper2code name="sink softmax">
    # <paper2code name="max shift">
    c = max(max(logits), sink_logit)  # shift for numerical stability
    # </paper2code name="max shift">
    exps = [math.exp(l - c) for l in logits]
    denom = sum(exps) + math.exp(sink_logit - c)
    return [e / denom for e in exps]
    # </paper2code name="sink softmax">


class TemperedAttention:
    """Single-head attention with length-aware temperature and a sink logit."""

    def __init__(self, n0=64, sink_logit=0.0, causal=False):
        self.n0 = n0
        self.sink_logit = sink_logit
        self.causal = causal

    def __call__(self, queries, keys, values):
        # <paper2code name="attention forward">
        m, n = len(queries), len(keys)
        d = len(queries[0])
        # <paper2code name="tempered logits">
        # <paper2code name="logit scale">
        scale = length_scale(n, self.n0) / math.sqrt(d)  # s_n / sqrt(d)
        # </paper2code name="logit scale">
        logits = [[scale * dot(q, k) for k in keys] for q in queries]
        # </paper2code name="tempered logits">
        # <paper2code name="causal mask">
        if self.causal:
            offset = n - m  # the queries are the last m positions
            for i in range(m):
                for j in range(i + offset + 1, n):
                    logits[i][j] = -math.inf
        # </paper2code name="causal mask">
        outputs = []
        for row in logits:
            probs = sink_softmax(row, self.sink_logit)
            outputs.append(weighted_sum(probs, values))
        return outputs
        # </paper2code name="attention forward">

"""Reference implementation of TemperedAttn (written independently of attention.py)."""
import math


def ref_length_scale(n, n0):
    if n <= n0:
        return 1.0
    return math.log(n) / math.log(n0)


def ref_sink_softmax(logits, sink_logit):
    # log-sum-exp over the logits and the sink, then exponentiate.
    allv = list(logits) + [sink_logit]
    top = max(allv)
    lse = top + math.log(sum(math.exp(v - top) for v in allv))
    return [math.exp(v - lse) for v in logits]


def ref_attention(queries, keys, values, n0=64, sink_logit=0.0, causal=False):
    m, n, d = len(queries), len(keys), len(queries[0])
    s = ref_length_scale(n, n0)
    outputs = []
    for i, q in enumerate(queries):
        logits = []
        for j, k in enumerate(keys):
            if causal and j > i + (n - m):
                logits.append(-math.inf)
            else:
                logits.append(s * sum(a * b for a, b in zip(q, k)) / math.sqrt(d))
        p = ref_sink_softmax(logits, sink_logit)
        dv = len(values[0])
        outputs.append([sum(p[j] * values[j][c] for j in range(n)) for c in range(dv)])
    return outputs

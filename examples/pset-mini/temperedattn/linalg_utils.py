"""Small list-based linear algebra helpers used by TemperedAttn."""


def dot(a, b):
    """Inner product of two equal-length vectors."""
    return sum(x * y for x, y in zip(a, b))


def weighted_sum(weights, vectors):
    """Return sum_j weights[j] * vectors[j] as a new list."""
    out = [0.0] * len(vectors[0])
    for w, vec in zip(weights, vectors):
        for k, x in enumerate(vec):
            out[k] += w * x
    return out

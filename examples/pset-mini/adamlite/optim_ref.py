"""Reference AdaMLite, written as a functional update over explicit state."""
import math


def ref_init_state(params):
    return {"t": 0,
            "m": [[0.0 for _ in p] for p in params],
            "v": [[0.0 for _ in p] for p in params]}


def ref_step(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8,
             weight_decay=0.0, max_grad_norm=None):
    """Return new params; `state` is updated in place."""
    b1, b2 = betas
    flat = [x for grad in grads for x in grad]
    norm = math.sqrt(sum(x * x for x in flat))
    scale = 1.0
    if max_grad_norm is not None and norm > max_grad_norm:
        scale = max_grad_norm / (norm + 1e-6)
    state["t"] += 1
    t = state["t"]
    new_params = []
    for k, (p, grad) in enumerate(zip(params, grads)):
        row = []
        for i, (x, g) in enumerate(zip(p, grad)):
            g = g * scale
            state["m"][k][i] = b1 * state["m"][k][i] + (1 - b1) * g
            state["v"][k][i] = b2 * state["v"][k][i] + (1 - b2) * g * g
            mh = state["m"][k][i] / (1 - b1 ** t)
            vh = state["v"][k][i] / (1 - b2 ** t)
            row.append(x - lr * weight_decay * x - lr * mh / (math.sqrt(vh) + eps))
        new_params.append(row)
    return new_params

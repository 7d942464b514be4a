"""AdaMLite optimiser in pure Python (parameters are lists of flat float lists)."""
import math


class AdaMLite:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, max_grad_norm=None):
        self.params = [list(p) for p in params]
        self.lr = lr
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay
        self.max_grad_norm = max_grad_norm
        # <paper2code name="state init">
        self.t = 0
        self.m = [[0.0] * len(p) for p in self.params]
        self.v = [[0.0] * len(p) for p in self.params]
        # </paper2code name="state init">

    def step(self, grads, lr=None):
        """One AdaMLite update; mutates self.params in place."""
        # <paper2code name="adamlite step">
        lr = self.lr if lr is None else lr
        self.t += 1
        b1, b2 = self.betas
        # <paper2code name="global norm clipping">
        if self.max_grad_norm is not None:
            total = math.sqrt(sum(g * g for grad in grads for g in grad))
            if total > self.max_grad_norm:
                coef = self.max_grad_norm / (total + 1e-6)
                grads = [[g * coef for g in grad] for grad in grads]
        # </paper2code name="global norm clipping">
        # <paper2code name="bias corrections">
        bc1 = 1.0 - b1 ** self.t
        bc2 = 1.0 - b2 ** self.t
        # </paper2code name="bias corrections">
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            for i in range(len(p)):
                # <paper2code name="moment updates">
                m[i] = b1 * m[i] + (1.0 - b1) * g[i]
                v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i]
                # </paper2code name="moment updates">
                # <paper2code name="decoupled update">
                p[i] *= 1.0 - lr * self.weight_decay  # decay first, as in AdamW
                m_hat = m[i] / bc1
                v_hat = v[i] / bc2
                p[i] -= lr * m_hat / (math.sqrt(v_hat) + self.eps)
                # </paper2code name="decoupled update">
        # </paper2code name="adamlite step">

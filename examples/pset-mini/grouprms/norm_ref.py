"""Reference GroupRMS: explicit loops over samples and groups, Jacobian-based backward."""
import numpy as np


def ref_forward(x, num_groups, gamma, beta, alpha, eps):
    n, c = x.shape[0], x.shape[1]
    cg = c // num_groups
    y = np.empty_like(x, dtype=float)
    for i in range(n):
        for g in range(num_groups):
            block = x[i, g * cg:(g + 1) * cg]
            centred = block - alpha * block.mean()
            rms = np.sqrt((centred ** 2).mean() + eps)
            for ch in range(cg):
                cc = g * cg + ch
                y[i, cc] = gamma[cc] * centred[ch] / rms + beta[cc]
    return y


def ref_backward(x, dy, num_groups, gamma, alpha, eps):
    """Gradients via the explicit Jacobian of each group's normalisation."""
    n, c = x.shape[0], x.shape[1]
    cg = c // num_groups
    dx = np.zeros_like(x, dtype=float)
    dgamma = np.zeros(c)
    dbeta = np.zeros(c)
    for i in range(n):
        for g in range(num_groups):
            sl = slice(g * cg, (g + 1) * cg)
            block = x[i, sl].ravel()
            m = block.size
            centre = np.eye(m) - alpha * np.ones((m, m)) / m
            xt = centre @ block
            rms = np.sqrt(xt @ xt / m + eps)
            xhat = xt / rms
            jac = (np.eye(m) - np.outer(xhat, xhat) / m) / rms @ centre
            gam = np.broadcast_to(gamma[sl].reshape((cg,) + (1,) * (x.ndim - 2)),
                                  x[i, sl].shape).ravel()
            up = dy[i, sl].ravel()
            dx[i, sl] = (jac.T @ (gam * up)).reshape(x[i, sl].shape)
            xhat_b = xhat.reshape(x[i, sl].shape)
            dgamma[sl] += (dy[i, sl] * xhat_b).reshape(cg, -1).sum(axis=1)
            dbeta[sl] += dy[i, sl].reshape(cg, -1).sum(axis=1)
    return dx, dgamma, dbeta

"""GroupRMS normalisation layer with a manual backward pass (NumPy)."""
import numpy as np


class GroupRMSNorm:
    def __init__(self, num_channels, num_groups, alpha=0.5, eps=1e-5):
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.c = num_channels
        self.g = num_groups
        self.alpha = alpha
        self.eps = eps
        self.gamma = np.ones(num_channels)
        self.beta = np.zeros(num_channels)
        self._cache = None

    def _param_shape(self, x):
        """Shape that broadcasts a per-channel vector against x."""
        return (1, self.c) + (1,) * (x.ndim - 2)

    def forward(self, x):
        n = x.shape[0]
        # <paper2code name="group view">
        xg = x.reshape(n, self.g, -1)
        # </paper2code name="group view">
        # <paper2code name="partial centering">
        mu = xg.mean(axis=-1, keepdims=True)
        xc = xg - self.alpha * mu  # alpha=0: RMSNorm, alpha=1: fully centred
        # </paper2code name="partial centering">
        # <paper2code name="group rms">
        r = np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + self.eps)
        # </paper2code name="group rms">
        xhat = (xc / r).reshape(x.shape)
        self._cache = (xhat, r)
        # <paper2code name="affine">
        shape = self._param_shape(x)
        return xhat * self.gamma.reshape(shape) + self.beta.reshape(shape)
        # </paper2code name="affine">

    def backward(self, dy):
        # <paper2code name="backward">
        xhat, r = self._cache
        n = dy.shape[0]
        # <paper2code name="parameter gradients">
        axes = (0,) + tuple(range(2, dy.ndim))  # every axis except channels
        dgamma = np.sum(dy * xhat, axis=axes)
        dbeta = np.sum(dy, axis=axes)
        # </paper2code name="parameter gradients">
        # <paper2code name="input gradient">
        d = (dy * self.gamma.reshape(self._param_shape(dy))).reshape(n, self.g, -1)
        xh = xhat.reshape(n, self.g, -1)
        proj = np.mean(d * xh, axis=-1, keepdims=True)
        dxc = (d - xh * proj) / r
        dx = dxc - self.alpha * np.mean(dxc, axis=-1, keepdims=True)
        # </paper2code name="input gradient">
        return dx.reshape(dy.shape), dgamma, dbeta
        # </paper2code name="backward">

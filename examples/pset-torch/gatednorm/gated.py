import torch
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(x, weight, eps=1e-6):
    """Root-mean-square normalisation over the last dimension, then a learned scale."""
    # <paper2code name="rms norm">
    # <paper2code name="mean square">
    ms = x.pow(2).mean(dim=-1, keepdim=True)
    # </paper2code name="mean square">
    # <paper2code name="normalize">
    y = x * torch.rsqrt(ms + eps)
    # </paper2code name="normalize">
    return y * weight
    # </paper2code name="rms norm">


def swiglu(x, w_gate, w_up):
    """SwiGLU: silu(x W_g) * (x W_u)."""
    # <paper2code name="swiglu gate">
    return F.silu(x @ w_gate) * (x @ w_up)
    # </paper2code name="swiglu gate">


class GatedNormBlock(nn.Module):
    def __init__(self, dim, hidden, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.w_gate = nn.Parameter(torch.randn(dim, hidden) / dim ** 0.5)
        self.w_up = nn.Parameter(torch.randn(dim, hidden) / dim ** 0.5)
        self.w_down = nn.Parameter(torch.randn(hidden, dim) / hidden ** 0.5)

    def forward(self, x):
        # <paper2code name="residual update">
        h = rms_norm(x, self.weight, self.eps)
        return x + swiglu(h, self.w_gate, self.w_up) @ self.w_down
        # </paper2code name="residual update">

"""The model of the quadratic toy federations: a point w whose output is ½ (w − b)ᵀ A (w − b) per sample."""
from __future__ import annotations

import math

import torch
from torch import nn

from fedkit.errors import ConfigError


class QuadraticPoint(nn.Module):
    """Input rows are [b, vec(A)] (see ``fedkit.data.toy``); ``init`` is the starting point (default 0)."""

    model_name = "quadratic"

    def __init__(self, input_shape, num_classes: int = 1, init=None):
        super().__init__()
        dim = int((math.isqrt(1 + 4 * input_shape[0]) - 1) // 2)
        if len(input_shape) != 1 or dim * (dim + 1) != input_shape[0]:
            raise ConfigError(f"model 'quadratic' expects rows [b, vec(A)] of length d + d², got {input_shape}")
        start = torch.zeros(dim) if init is None else torch.as_tensor(init, dtype=torch.float32)
        if start.shape != (dim,):
            raise ConfigError(f"model 'quadratic': init must have {dim} entries, got {list(start.shape)}")
        self.w = nn.Parameter(start.clone())

    def forward(self, x):
        d = self.w.numel()
        r = self.w - x[:, :d]
        return 0.5 * torch.einsum("bi,bij,bj->b", r, x[:, d:].reshape(-1, d, d), r)

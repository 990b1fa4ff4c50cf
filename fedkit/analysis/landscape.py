"""Loss landscapes along random filter-normalised directions (Li et al. 2018, "Visualizing the loss landscape of
neural nets")."""
from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..engine.functional import FlatModel, evaluate

# layers whose tensors get no direction (Li et al.: "ignore biases and BN")
NORM_LAYERS = (nn.modules.batchnorm._NormBase, nn.GroupNorm, nn.LayerNorm)


def filter_normalized_direction(fm: FlatModel, w: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A Gaussian direction (flat, like w) whose every filter (slice along dim 0 of a weight tensor with ≥ 2 dims)
    has the norm of w's matching filter; zero on 1-dim tensors (biases) and on normalisation layers."""
    d = torch.randn(w.shape, generator=generator, dtype=w.dtype, device=generator.device).to(w.device)
    for t in fm.layout.tensors:
        if len(t.shape) < 2 or issubclass(t.kind, NORM_LAYERS):
            d[t.slice] = 0
            continue
        filters, reference = d[t.slice].view(t.shape[0], -1), w[t.slice].view(t.shape[0], -1)
        filters.mul_(reference.norm(dim=1, keepdim=True) / (filters.norm(dim=1, keepdim=True) + 1e-10))
    return d


def loss_surface_1d(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, task: str,
                    alphas: Sequence[float], seed: int = 0, direction: torch.Tensor | None = None,
                    buffers: dict | None = None, chunk: int = 2048) -> pd.DataFrame:
    """Loss and accuracy on (x, y) at w + α d for every α (columns alpha, loss, accuracy); d is ``direction`` or
    a filter-normalised one drawn with ``seed``."""
    d = filter_normalized_direction(fm, w, _generator(seed)) if direction is None else direction
    rows = [(a, *evaluate(fm, w + a * d, x, y, task, buffers, chunk)[::-1]) for a in map(float, alphas)]
    return pd.DataFrame(rows, columns=["alpha", "loss", "accuracy"])


def loss_surface_2d(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, task: str,
                    alphas: Sequence[float], betas: Sequence[float] | None = None, seed: int = 0,
                    directions: tuple[torch.Tensor, torch.Tensor] | None = None, buffers: dict | None = None,
                    chunk: int = 2048) -> pd.DataFrame:
    """Loss and accuracy at w + α d1 + β d2 on the grid alphas × betas (default betas = alphas), one row per point
    (columns alpha, beta, loss, accuracy); d1, d2 are ``directions`` or two filter-normalised ones drawn in turn
    from one generator seeded with ``seed``."""
    if directions is None:
        g = _generator(seed)
        directions = filter_normalized_direction(fm, w, g), filter_normalized_direction(fm, w, g)
    d1, d2 = directions
    grid = itertools.product(map(float, alphas), map(float, alphas if betas is None else betas))
    rows = [(a, b, *evaluate(fm, w + a * d1 + b * d2, x, y, task, buffers, chunk)[::-1]) for a, b in grid]
    return pd.DataFrame(rows, columns=["alpha", "beta", "loss", "accuracy"])


def sharpness(frame: pd.DataFrame) -> float:
    """Mean loss increase over a surface: the mean, over every grid point except the centre (α = 0, and β = 0 for
    a 2-D surface), of loss(point) − loss(centre). Larger is sharper; compare only surfaces on the same grid."""
    coordinates = [c for c in ("alpha", "beta") if c in frame]
    at_centre = (frame[coordinates] == 0).all(axis=1)
    if at_centre.sum() != 1:
        raise ValueError(f"the surface needs exactly one centre point (all of {coordinates} zero)")
    centre = frame.loc[at_centre, "loss"].item()
    return float((frame.loc[~at_centre, "loss"] - centre).mean())


def data_subset(x: torch.Tensor, y: torch.Tensor, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """n samples of (x, y) drawn without replacement with ``seed`` (all of them when n ≥ len(x))."""
    if n >= len(x):
        return x, y
    idx = torch.as_tensor(np.random.default_rng(seed).choice(len(x), n, replace=False), device=x.device)
    return x[idx], y[idx]


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)  # on the CPU: the same directions on every device

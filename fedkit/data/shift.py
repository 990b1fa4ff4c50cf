"""Feature shift: the same labels seen under different input distributions, one per client (FedBN's setting).

``feature_shift`` takes a bundled image set (``mnist_5k`` or ``digits``: no data root needed) and gives each of its
``users`` one of several *domains*, each an image transform: a scanner with its own contrast a, brightness b, noise
level σ and rotation θ,

    x' = clip(rotate_θ(a·x + b) + σ·ε, 0, 1),   ε ~ N(0, 1) drawn once per pixel (a fixed seed: part of the data).

Training sample i belongs to user i mod ``users`` and user u sees domain u mod D (D = len(domains)); the users are
the data set's natural split (``partition="natural"`` with ``num_clients=users`` gives client u user u's samples),
so every client holds an IID share of the labels, under its own domain. The test set is the base test set once per
domain, in domain order: rows [d·T, (d+1)·T) are domain d (``domain_rows``), so each client can be evaluated on test
images of its own domain, and a global model on all of them (the mean over domains).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Annotated, Literal

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import ConfigError
from .base import FedData

TRANSFORM = {"contrast": 1.0, "brightness": 0.0, "noise": 0.0, "rotate": 0.0}  # a domain's keys and their defaults
# four scanners: the clean images, a faded one (contrast a = 0.4 around mid grey: b = (1 − a)/2), a dim one
# (a = 0.5) and a noisy one that also rotates by 30°
SCANNERS = ({}, {"contrast": 0.4, "brightness": 0.3}, {"contrast": 0.5}, {"noise": 0.3, "rotate": 30.0})


def domain_transform(domain: dict) -> dict[str, float]:
    """A domain's full transform (defaults filled in), or ConfigError naming what is wrong."""
    if not isinstance(domain, dict):
        raise ConfigError(f"feature_shift: a domain must be a mapping of {sorted(TRANSFORM)}, got {domain!r}")
    unknown = sorted(set(domain) - set(TRANSFORM))
    if unknown:
        raise ConfigError(f"feature_shift: unknown domain key(s) {unknown}; known: {sorted(TRANSFORM)}")
    out = {**TRANSFORM, **domain}
    for key, value in out.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"feature_shift: domain {key} must be a finite number, got {value!r}")
    if out["noise"] < 0:
        raise ConfigError(f"feature_shift: domain noise must be ≥ 0, got {out['noise']!r}")
    return {k: float(v) for k, v in out.items()}


def shift_images(x: torch.Tensor, contrast: float = 1.0, brightness: float = 0.0, noise: float = 0.0,
                 rotate: float = 0.0, seed: int = 0) -> torch.Tensor:
    """Images x [n, C, H, W] in [0, 1] seen through one domain: clip(rotate_θ(a·x + b) + σ·ε, 0, 1), θ in degrees
    (counter-clockwise, the corners filled with the transformed background a·0 + b), ε from ``seed``."""
    out = contrast * x + brightness
    if rotate:
        theta = math.radians(rotate)
        rot = torch.tensor([[math.cos(theta), -math.sin(theta), 0.0], [math.sin(theta), math.cos(theta), 0.0]],
                           dtype=x.dtype)
        grid = F.affine_grid(rot.expand(len(x), 2, 3), list(x.shape), align_corners=False)
        out = F.grid_sample(out - brightness, grid, align_corners=False) + brightness  # zeros padding → background b
    if noise:
        out = out + noise * torch.randn(x.shape, generator=torch.Generator().manual_seed(seed), dtype=x.dtype)
    return out.clamp(0.0, 1.0)


def domain_rows(data: FedData, domain: int, num_domains: int) -> slice:
    """The test rows of domain ``domain`` in a feature-shift data set of ``num_domains`` domains."""
    per = len(data.y_test) // num_domains
    return slice(domain * per, (domain + 1) * per)


def user_domain(user: int, num_domains: int) -> int:
    """The domain user ``user`` sees."""
    return user % num_domains


def feature_shift(base: Literal["mnist_5k", "digits"] = "mnist_5k", domains: list | tuple = SCANNERS,
                  users: Annotated[int, "[1, inf)"] = 8) -> FedData:
    """The bundled set ``base`` split among ``users`` users, user u seeing domain u mod len(``domains``) (each a
    mapping with any of contrast, brightness, noise, rotate; {} is the clean images), the test set once per domain."""
    if isinstance(domains, (str, bytes)) or not isinstance(domains, (list, tuple)) or not domains:
        raise ConfigError(f"feature_shift: domains must be a non-empty list of mappings, got {domains!r}")
    frozen = tuple(tuple(sorted(domain_transform(d).items())) for d in domains)
    if users < len(frozen):
        raise ConfigError(f"feature_shift: users={users} must be ≥ the number of domains ({len(frozen)}), so that "
                          "every domain has a user")
    return _feature_shift(base, frozen, users)


@lru_cache(maxsize=8)
def _feature_shift(base: str, domains: tuple, users: int) -> FedData:
    from .datasets import load_dataset

    data = load_dataset(base)
    n_train, n_domains = len(data.y_train), len(domains)
    user = np.arange(n_train) % users
    domain = user_domain(user, n_domains)
    x_train = data.x_train.clone()
    tests = []
    for d, transform in enumerate(domains):
        rows = torch.as_tensor(np.flatnonzero(domain == d))
        x_train[rows] = shift_images(data.x_train[rows], **dict(transform), seed=2 * d)
        tests.append(shift_images(data.x_test, **dict(transform), seed=2 * d + 1))
    return FedData(f"feature_shift_{base}", x_train, data.y_train, torch.cat(tests), data.y_test.repeat(n_domains),
                   data.num_classes, users=user)

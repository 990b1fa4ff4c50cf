"""A small classifier with BatchNorm, for FedBN's lessons on a CPU: the MLP of ``mlp`` with a BatchNorm layer after
every hidden Linear layer (Linear → BatchNorm1d → ReLU), PyTorch's default initialisation.

BatchNorm normalises every hidden unit with its batch's mean and variance while training and with running estimates
of them when evaluated; those running statistics are buffers, which FedAvg averages like the weights and FedBN keeps
on each client (``Algorithm.buffers``). A model with buffers runs on the sequential engine.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from fedkit.errors import ConfigError

from ._shapes import flat_features


class BNMLP(nn.Module):
    """inputs → (Linear → BatchNorm1d → ReLU) per hidden width → Linear → C. 102,026 params for (1, 28, 28), the
    default hidden=(128,) and 10 classes (of which 256 the BatchNorm layer's γ and β)."""

    model_name = "mlp_bn"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, hidden: Sequence[int] = (128,)):
        super().__init__()
        if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence) or not hidden or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in hidden
        ):
            raise ConfigError(f"model 'mlp_bn': hidden must be a non-empty tuple of positive ints, got {hidden!r}")
        sizes = [flat_features(self.model_name, input_shape), *hidden]
        layers: list[nn.Module] = [nn.Flatten()]
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(n_in, n_out), nn.BatchNorm1d(n_out), nn.ReLU()]
        self.net = nn.Sequential(*layers, nn.Linear(sizes[-1], num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

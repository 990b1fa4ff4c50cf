"""Fully connected classifiers of §20.2 and §20.8; both flatten inputs of any shape."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from fedkit.errors import ConfigError

from ._shapes import flat_features


def _stack(sizes: Sequence[int]) -> nn.Sequential:
    """Flatten → Linear layers through ``sizes`` with ReLU between them (none after the last)."""
    layers: list[nn.Module] = [nn.Flatten()]
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class FcNet(nn.Module):
    """NIID-Bench FcNet (§20.2): inputs → 32 → 16 → 8 → C with ReLU; weights N(0, 0.1²), biases 0.1.

    4,650 params for 123 inputs (adult/a9a) and 2 classes.
    """

    model_name = "mlp"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, hidden: Sequence[int] = (32, 16, 8)):
        super().__init__()
        if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in hidden
        ):
            raise ConfigError(f"model 'mlp': hidden must be a tuple of positive ints, got {hidden!r}")
        self.net = _stack([flat_features(self.model_name, input_shape), *hidden, num_classes])
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                nn.init.normal_(layer.weight, 0.0, 0.1)
                nn.init.constant_(layer.bias, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class FC500(nn.Module):
    """DRAG's EMNIST network (§20.8): inputs → 500 → ReLU → C, PyTorch default init.

    ``hidden_layers=2`` gives the alternative reading 784 → 500 → 500 → 47. 416,047 params for 784 inputs
    and 47 classes (666,547 with two hidden layers).
    """

    model_name = "fc500"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, hidden_layers: int = 1):
        super().__init__()
        if not isinstance(hidden_layers, int) or isinstance(hidden_layers, bool) or hidden_layers < 1:
            raise ConfigError(f"model 'fc500': hidden_layers must be an int >= 1, got {hidden_layers!r}")
        self.net = _stack([flat_features(self.model_name, input_shape), *[500] * hidden_layers, num_classes])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

"""CIFAR ResNet-18 (§20.3) with BatchNorm or GroupNorm(2 groups)."""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from fedkit.errors import ConfigError

from ._shapes import image_shape

_NORMS: dict[str, Callable[[int], nn.Module]] = {
    "bn": nn.BatchNorm2d,
    "gn": lambda channels: nn.GroupNorm(2, channels),  # FedACG / FedDyn / Reddi et al.
}


class BasicBlock(nn.Module):
    """Two 3×3 convs with a residual connection; 1×1 conv + norm shortcut when the shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int, norm: Callable[[int], nn.Module]):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.norm1 = norm(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.norm2 = norm(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), norm(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """CIFAR ResNet-18 (§20.3): 3×3 stem without max-pool, stages 64/128/256/512 (strides 1/2/2/2) of two
    BasicBlocks, global average pool, FC 512 → C. 11,173,962 params for 10 classes (same with GN).

    With ``norm="bn"`` the model has running-stat buffers that training mode updates in place, so it cannot
    run under ``torch.func.vmap``; ``norm="gn"`` can.
    """

    model_name = "resnet18"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, norm: str = "bn"):
        super().__init__()
        if norm not in _NORMS:
            raise ConfigError(f"model 'resnet18': norm must be one of {sorted(_NORMS)}, got {norm!r}")
        make_norm = _NORMS[norm]
        c, _, _ = image_shape(self.model_name, input_shape, [], "(3, 32, 32)")
        self.stem = nn.Sequential(nn.Conv2d(c, 64, 3, 1, 1, bias=False), make_norm(64), nn.ReLU())
        blocks, c_in = [], 64
        for c_out, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(c_in, c_out, stride, make_norm), BasicBlock(c_out, c_out, 1, make_norm)]
            c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.blocks(self.stem(x)).mean(dim=(2, 3)))

"""Small convolutional classifiers of §20.1, §20.4, §20.7 and §20.8 (no BN, no dropout, logits out).

Each computes its flatten size from input_shape, so any (C, H, W) large enough for its trunk works.
"""
from __future__ import annotations

import torch
from torch import nn

from fedkit.errors import ConfigError

from ._shapes import image_shape

_CONV5 = (5, 1, 0, False)
_CONV5_SAME = (5, 1, 2, False)
_POOL2 = (2, 2, 0, False)
_POOL3S2 = (3, 2, 0, True)  # ceil_mode: TF 'SAME' pooling windows


class SimpleCNN(nn.Module):
    """NIID-Bench simple CNN (§20.1): conv5(6) → pool → conv5(16) → pool → 120 → 84 → C.

    44,426 params for (1, 28, 28) and 10 classes, 62,006 for (3, 32, 32). ``projection`` = P > 0 inserts MOON's
    projection head (84 → 84 → ReLU → P) before the output layer, which then reads the P-dim projection
    (algorithms-baselines §10: the original MOON code).
    """

    model_name = "cnn"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, projection: int = 0):
        super().__init__()
        if not isinstance(projection, int) or isinstance(projection, bool) or projection < 0:
            raise ConfigError(f"model 'cnn': projection must be an int >= 0, got {projection!r}")
        example = "(1, 28, 28) or (3, 32, 32)"
        c, h, w = image_shape(self.model_name, input_shape, [_CONV5, _POOL2] * 2, example)
        self.features = nn.Sequential(
            nn.Conv2d(c, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
        )
        head = [nn.Linear(84, 84), nn.ReLU(), nn.Linear(84, projection)] if projection else []
        self.classifier = nn.Sequential(
            nn.Linear(16 * h * w, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), *head,
            nn.Linear(projection or 84, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class LeNet5(nn.Module):
    """LeNet-5 (§20.4 default): conv5(6, pad 2) → pool → conv5(16) → pool → 120 → 84 → C; 61,706 params."""

    model_name = "lenet5"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        layers = [_CONV5_SAME, _POOL2, _CONV5, _POOL2]
        c, h, w = image_shape(self.model_name, input_shape, layers, "(1, 28, 28)")
        self.features = nn.Sequential(
            nn.Conv2d(c, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
        )
        self.classifier = nn.Sequential(
            nn.Linear(16 * h * w, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class FedDualLeNet(nn.Module):
    """FedDUAL's LeNet variant (``Models.py`` ``build_lenet``; algorithms-seed §2.3): conv5(6) → tanh → avg-pool 2 →
    conv5(6) → tanh → avg-pool 2 → Dense(120, tanh) on every spatial position → flatten → 84 → tanh → C.
    Valid convolutions: (1, 28, 28) gives 4×4 positions of 120 features, 164,116 params for 10 classes."""

    model_name = "feddual_lenet"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        c, h, w = image_shape(self.model_name, input_shape, [_CONV5, _POOL2] * 2, "(1, 28, 28)")
        self.features = nn.Sequential(
            nn.Conv2d(c, 6, 5), nn.Tanh(), nn.AvgPool2d(2),
            nn.Conv2d(6, 6, 5), nn.Tanh(), nn.AvgPool2d(2),
        )
        self.position = nn.Linear(6, 120)  # Keras Dense on a 4-D tensor acts on the channel axis of each position
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(120 * h * w, 84), nn.Tanh(),
                                        nn.Linear(84, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = self.features(x).permute(0, 2, 3, 1)  # channels last, as Keras holds them
        return self.classifier(torch.tanh(self.position(positions)))


class LeafCNN(nn.Module):
    """LEAF FEMNIST CNN (§20.7): conv5(32, same) → pool → conv5(64, same) → pool → 2048 → C.

    6,603,710 params for (1, 28, 28) and 62 classes.
    """

    model_name = "leaf_cnn"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        c, h, w = image_shape(self.model_name, input_shape, [_CONV5_SAME, _POOL2] * 2, "(1, 28, 28)")
        self.features = nn.Sequential(
            nn.Conv2d(c, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
        )
        self.classifier = nn.Sequential(nn.Linear(64 * h * w, 2048), nn.ReLU(), nn.Linear(2048, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class TFCNN(nn.Module):
    """TF-tutorial CIFAR CNN of FedDyn/AdaBest, DRAG's alternative (§20.8).

    conv5(64) → ReLU → maxpool 3/2 → conv5(64) → ReLU → maxpool 3/2 → 384 → 192 → C. Convs are unpadded
    and the pools use TF 'SAME' windows (ceil_mode), so (3, 32, 32) gives 64·5·5 = 1600 features and
    797,962 params for 10 classes, the §20.8 count. No LRN.
    """

    model_name = "tf_cnn"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        c, h, w = image_shape(self.model_name, input_shape, [_CONV5, _POOL3S2] * 2, "(3, 32, 32)")
        self.features = nn.Sequential(
            nn.Conv2d(c, 64, 5), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
            nn.Conv2d(64, 64, 5), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
            nn.Flatten(),
        )
        self.classifier = nn.Sequential(
            nn.Linear(64 * h * w, 384), nn.ReLU(), nn.Linear(384, 192), nn.ReLU(), nn.Linear(192, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))

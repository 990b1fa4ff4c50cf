"""A frozen backbone's features in place of the images: computed once, cached on disk, trained on by a small head.

FedDUAL's CIFAR model is an ImageNet VGG-16 conv base that never trains and a two-layer head (algorithms-seed §2.6):
every round would push the same images through the same frozen trunk, so fedkit runs the trunk once per data set
and federates the head alone on the 512 features (a dense chain, which the vectorized engine runs as bmm).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch

from ..errors import ConfigError
from .base import FedData

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
BACKBONES = ("vgg16_imagenet", "vgg16_random")  # the random trunk is the offline stand-in (seeded, labelled)
VERSION = 2  # of the computed features, in their file name (1: the random trunk had PyTorch's default init)


def features_cache() -> Path:
    return Path(os.environ.get("FEDKIT_FEATURES", Path.home() / ".cache" / "fedkit" / "features"))


def backbone_features(data: FedData, backbone: str, batch: int = 256) -> FedData:
    """``data`` with every image replaced by the frozen ``backbone``'s flattened output (ImageNet-normalised RGB
    in; the VGG-16 trunk gives 512 features for 32×32 images), cached under $FEDKIT_FEATURES keyed on the images
    and the backbone."""
    if backbone not in BACKBONES:
        raise ConfigError(f"unknown backbone {backbone!r}; known: {', '.join(BACKBONES)}")
    if data.x_train.dim() != 4 or data.x_train.shape[1] != 3:
        raise ConfigError(f"backbone {backbone!r} needs RGB images [n, 3, H, W]; {data.name} has "
                          f"{tuple(data.x_train.shape[1:])}")
    digest = hashlib.sha256()
    for t in (data.x_train, data.y_train, data.x_test):
        digest.update(t.numpy().tobytes())
    path = features_cache() / f"{data.name}-{backbone}-v{VERSION}-{digest.hexdigest()[:16]}.pt"
    if path.exists():
        x_train, x_test = torch.load(path)
    else:
        trunk = _trunk(backbone)
        x_train, x_test = (_apply(trunk, x, batch) for x in (data.x_train, data.x_test))
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save((x_train, x_test), path)
    return FedData(f"{data.name}+{backbone}", x_train, data.y_train, x_test, data.y_test, data.num_classes,
                   data.users, data.task)


def _trunk(backbone: str) -> torch.nn.Module:
    from ..models import VGG16

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = VGG16((3, 32, 32), 10, pretrained=backbone == "vgg16_imagenet")
        if backbone == "vgg16_random":  # torchvision's own VGG init: PyTorch's default one shrinks the signal layer
            for layer in model.features:  # by layer until the 13th leaves features that barely depend on the image
                if isinstance(layer, torch.nn.Conv2d):
                    torch.nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
                    torch.nn.init.zeros_(layer.bias)
    return model.features.eval()


@torch.no_grad()
def _apply(trunk: torch.nn.Module, x: torch.Tensor, batch: int) -> torch.Tensor:
    mean, std = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    return torch.cat([trunk((x[i:i + batch] - mean) / std).flatten(1) for i in range(0, len(x), batch)])

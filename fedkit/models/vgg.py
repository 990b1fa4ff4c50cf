"""VGG-16 without BN (§20.5): torchvision-compatible conv trunk and a small two-layer head."""
from __future__ import annotations

import torch
from torch import nn

from fedkit.errors import ConfigError, DataNotFoundError

from ._shapes import image_shape

# torchvision's configuration "D": output channels of each 3×3 conv, "M" for a 2×2 max-pool.
_TRUNK = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


class VGG16(nn.Module):
    """VGG-16 (§20.5): 13 conv3×3 + ReLU (14,714,688 params), flatten, FC → head_hidden → ReLU → C.

    ``features`` has the layer indices of torchvision's ``vgg16().features``, so ``pretrained=True`` loads
    its ImageNet weights (which expect ImageNet-normalised RGB inputs). torchvision's adaptive 7×7 pool is
    left out: a (3, 32, 32) input gives 512 features. ``freeze_features=True`` makes the trunk
    non-trainable (no requires_grad), so only the head counts as parameters.
    """

    model_name = "vgg16"

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        head_hidden: int = 512,
        pretrained: bool = False,
        freeze_features: bool = False,
    ):
        super().__init__()
        if not isinstance(head_hidden, int) or isinstance(head_hidden, bool) or head_hidden < 1:
            raise ConfigError(f"model 'vgg16': head_hidden must be a positive int, got {head_hidden!r}")
        for option, value in (("pretrained", pretrained), ("freeze_features", freeze_features)):
            if not isinstance(value, bool):
                raise ConfigError(f"model 'vgg16': {option} must be True or False, got {value!r}")
        pools = [(2, 2, 0, False)] * _TRUNK.count("M")
        c, h, w = image_shape(
            self.model_name, input_shape, pools, "(3, 32, 32)", channels=3 if pretrained else None
        )
        layers: list[nn.Module] = []
        for v in _TRUNK:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU()]
                c = v
        self.features = nn.Sequential(*layers)
        if pretrained:
            _load_imagenet_trunk(self.features)
        self.features.requires_grad_(not freeze_features)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(512 * h * w, head_hidden), nn.ReLU(), nn.Linear(head_hidden, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def _load_imagenet_trunk(features: nn.Sequential) -> None:
    """Copy torchvision's ImageNet VGG-16 conv weights (download or torch hub cache) into ``features``."""
    from torchvision.models import VGG16_Weights

    weights = VGG16_Weights.IMAGENET1K_V1
    try:
        state = weights.get_state_dict(progress=False)
    except (OSError, RuntimeError) as e:  # offline (URLError is an OSError), or a corrupt cached file
        raise DataNotFoundError(
            f"model 'vgg16' with pretrained=True needs torchvision's ImageNet weights ({weights.url}) and "
            f"could not get them: {e}. Offline, put that file in {torch.hub.get_dir()}/checkpoints/, "
            "or use pretrained=False"
        ) from e
    prefix = "features."
    features.load_state_dict({k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)})

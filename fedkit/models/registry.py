"""Models by name: ``build_model("cnn", (1, 28, 28), 10)``."""
from __future__ import annotations

from collections.abc import Callable

from torch import nn

from fedkit.errors import ConfigError
from fedkit.registry import build

from .bn import BNMLP
from .cnn import TFCNN, FedDualLeNet, LeafCNN, LeNet5, SimpleCNN
from .lstm import CharLSTM
from .mlp import FC500, FcNet
from .quadratic import QuadraticPoint
from .resnet import ResNet18
from .text import LoRATransformer
from .vgg import VGG16

MODELS: dict[str, Callable[..., nn.Module]] = {
    cls.model_name: cls
    for cls in (SimpleCNN, FcNet, LeNet5, ResNet18, VGG16, CharLSTM, FC500, LeafCNN, TFCNN, QuadraticPoint,
                FedDualLeNet, LoRATransformer, BNMLP)
}


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, **options) -> nn.Module:
    """Instantiate model ``name`` for samples of ``input_shape`` (no batch dim) and ``num_classes`` outputs.

    ``options`` are the model's keyword arguments (e.g. ``norm="gn"`` for resnet18); see ``MODELS[name]``.
    """
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 1:
        raise ConfigError(f"model {name!r}: num_classes must be a positive int, got {num_classes!r}")
    return build("model", MODELS, name, fixed={"input_shape": input_shape, "num_classes": num_classes}, **options)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameter entries (requires_grad)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

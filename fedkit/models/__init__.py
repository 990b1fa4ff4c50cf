"""Model zoo of §20 of the baselines research note, by name (``MODELS``, ``build_model``).

Every model maps a batch to logits [B, C], has no dropout and no in-place activation ops, so it runs under
``torch.func.functional_call`` / ``grad`` / ``vmap`` (except ResNet-18 with BatchNorm under vmap).
"""
from .cnn import TFCNN, FedDualLeNet, LeafCNN, LeNet5, SimpleCNN
from .lstm import CharLSTM, LSTMStack
from .mlp import FC500, FcNet
from .quadratic import QuadraticPoint
from .registry import MODELS, build_model, count_parameters
from .resnet import ResNet18
from .text import LoRATransformer
from .vgg import VGG16

__all__ = [
    "FC500", "MODELS", "TFCNN", "VGG16", "CharLSTM", "FcNet", "LSTMStack", "LeNet5", "LeafCNN", "FedDualLeNet",
    "LoRATransformer", "QuadraticPoint", "ResNet18", "SimpleCNN", "build_model", "count_parameters",
]

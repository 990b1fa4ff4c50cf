"""FedBN (Li et al., ICLR 2021): every client keeps its own BatchNorm layers — affine tensors (γ, β) and running
statistics — and the server averages the rest (algorithms-baselines §8).

BatchNorm tensors are selected by module type (``Layout`` "batchnorm"), not by name. A client trains from the global
non-BN tensors and its own BN tensors; its upload is zero on the BN tensors, so the server's copy of them never moves
(and is never used: FedBN is personalised). ``client_models`` gives each client's model, which the federation
evaluates on the test set (``test_accuracy_clients``: their mean). Without BatchNorm layers FedBN is FedAvg (FedDUAL's
LeNet and VGG-16 have none, which is why its FedBN and FedAvg CIFAR-100 numbers agree).
"""
from typing import Literal

import torch

from ..errors import ConfigError
from .base import Algorithm


class FedBN(Algorithm):
    name = "fedbn"
    buffers = "local"

    def __init__(self, run, weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, weighting)
        self.bn = None if run.layout is None else run.layout.coordinates(run.layout.batchnorm)

    def index(self, device) -> torch.Tensor:
        if self.bn is None:
            raise ConfigError("fedbn selects the BatchNorm tensors of the model: build it with the model's layout "
                              "(a Federation does)")
        return self.bn.to(device)

    def client_init(self, w0):
        return {"bn": w0[self.index(w0.device)]}

    def local_init(self, c):
        w = c.w0.index_copy(0, self.index(c.w0.device), c.kept["bn"])
        return w, self.optimizer.init(w)

    def upload(self, w, local, c):
        idx = self.index(w.device)
        return {"delta": (w - c.w0).index_fill(0, idx, 0.0)}

    def keep(self, w, local, c):
        return {"bn": w[self.index(w.device)]}

    def client_models(self, w, kept):
        """Every client's model [N, d]: the global tensors with its own BatchNorm tensors (None without BatchNorm:
        then every client's model is the global one)."""
        idx = self.index(w.device)
        if not len(idx):
            return None
        return w.expand(len(kept["bn"]), -1).index_copy(1, idx, kept["bn"])

    def bytes_up(self, ups):
        """The non-BN tensors only."""
        d = ups["delta"].shape[1] - len(self.index("cpu"))
        return d * ups["delta"].element_size() * torch.ones(len(ups["delta"]))

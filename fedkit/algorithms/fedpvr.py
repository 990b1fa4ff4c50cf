"""FedPVR (Li, Schmidt, Alstrøm, Stich, CVPR 2023): partial variance reduction — SCAFFOLD's option-II control
variates on a set V of tensors only (default: the head, the trailing Linear layers), plain local SGD elsewhere.

Client step:  y_V ← y_V − η_l (g_V + c_V − c_{i,V})   (no momentum on V)
              y_R ← y_R − η_l m_R,  m ← ρ m + g         (the client optimizer's momentum ρ on the rest R)
              with Adam (FedDUAL's setting), ``correction_at`` places h = c − c_i on V: "after_step" (default)
              Adam on g, then y_V ← y_V − η_l h_V; "in_optimizer" Adam on g + h (h on V, 0 elsewhere)
              (with momentum, V takes plain SGD steps, where both placements are one update)
New variate:  c_i⁺ = c_i − c + (x_t − y_i) / (K_i η_l)  on V, 0 elsewhere
Server:       x ← uniform mean of the models,  c ← c + (1/N) Σ_{i∈S} Δc_i      (algorithms-baselines §11)
"""
from typing import Literal

import torch

from ..errors import ConfigError
from ..layout import Selection
from ..optim import SGD
from .base import CorrectionAt
from .scaffold import Scaffold


class FedPVR(Scaffold):
    name = "fedpvr"

    def __init__(self, run, layers: Selection = "head", weighting: Literal["data", "uniform"] = "uniform",
                 correction_at: CorrectionAt = "after_step"):
        super().__init__(run, 1.0, weighting, correction_at)
        if isinstance(run.optimizer, SGD) and run.optimizer.weight_decay:
            raise ConfigError(f"fedpvr runs SGD (momentum allowed, off V) without weight decay, or Adam; got "
                              f"{run.optimizer!r}")
        self.layers = layers
        self.vr = None if run.layout is None else run.layout.mask(layers, what="fedpvr: layers")
        if self.vr is not None and layers != "all" and self.vr.all():
            raise ConfigError(f"fedpvr: layers {layers!r} selects every parameter tensor of the model (layers "
                              f"{', '.join(run.layout.layers)}), which makes FedPVR SCAFFOLD; choose fewer, e.g. "
                              "'output' or 'last:1', or say layers 'all' if that is meant")
        self._on: dict[torch.device, torch.Tensor] = {}

    def mask(self, like: torch.Tensor) -> torch.Tensor:
        """V as a 0/1 float vector on ``like``'s device."""
        if self.vr is None:
            raise ConfigError("fedpvr selects tensors of the model: build it with the model's layout (a Federation "
                              "does)")
        if like.device not in self._on:
            self._on[like.device] = self.vr.to(like.device, like.dtype)
        return self._on[like.device]

    def correction_term(self, w, c):
        return self.mask(w) * (c.recv["c"] - c.kept["c_i"])

    def local_step(self, w, local, c, grad_at):
        rho = getattr(self.optimizer, "momentum", 0.0)
        if not rho:  # plain SGD, or Adam with the correction placed by correction_at
            return super().local_step(w, local, c, grad_at)
        g, loss = grad_at(w)
        vr = self.mask(w)
        d = g + self.correction_term(w, c)
        m = rho * local["m"] + d
        d = vr * d + (1 - vr) * m
        return w - c.lr * d, {"m": m}, loss

    def _c_new(self, w, c):
        return self.mask(w) * super()._c_new(w, c)

    def bytes_up(self, ups):
        """Δy_i in full, Δc_i on V only."""
        v = int(self.vr.sum()) if self.vr is not None else ups["dc"].shape[1]
        return (ups["delta"].shape[1] + v) * ups["delta"].element_size() * torch.ones(len(ups["delta"]))

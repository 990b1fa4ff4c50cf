"""FedDUAL (Dubey et al.): an adaptive local loss and the barycentric aggregation of the output layer.

Client k (algorithms-seed §2.5; Adam, moments reset every round):
    L_k = (1 − β)·CE + β·KL(softmax(vec θ_k) ‖ softmax(vec θ^g))          (eqs. 3–5, 7)
    β   = σ(A_local − A_global)                                           (eq. 6)
with A_global the received model's accuracy on the client's training data and A_local the current local model's,
measured at the start of every local epoch (``beta_mode="per_epoch"``; epoch 1 gives β = 1/2). After training it
uploads θ_k and G_k = ∇ Σ_{(x, y) ∈ D_k} CE(f_θk(x), y) on the dynamic tensors (the official code's "gradients").
Server: each dynamic tensor j ← θ^g[j] − WB({G_k[j]}) (eqs. 10–13, ``barycenter.py``); every other tensor the
unweighted mean of the θ_k.

Switches for the official code's reading (§2.3–2.4): ``kl_mode="code_constant"`` (its KL is a constant of the
weights before training: no gradient), ``beta_mode="code_constant_half"`` (its β is measured before training, where
local = global: β = 1/2 always). Ablations (Tables 2–4): ``adaptive_loss=False`` is plain CE (dynamic aggregation
only), ``dynamic_aggregation=False`` is the mean everywhere (adaptive loss only).
The KL runs over the trainable parameters (a backbone frozen outside the model, e.g. cached VGG features, is not
in it); its gradient is O(1/d) per coordinate, so the term is nearly inert at any model size.
"""
from __future__ import annotations

from typing import Annotated, Literal

import torch
import torch.nn.functional as F

from ..errors import ConfigError
from ..layout import Selection
from .barycenter import free_support_barycenter, wasserstein_barycenter
from .base import Algorithm


def kl_divergence(w: torch.Tensor, w0: torch.Tensor) -> torch.Tensor:
    """KL(softmax(w) ‖ softmax(w0)) of two flat weight vectors (eqs. 3–4)."""
    log_p, log_q = F.log_softmax(w, -1), F.log_softmax(w0, -1)
    return (log_p.exp() * (log_p - log_q)).sum(-1)


def kl_gradient(w: torch.Tensor, w0: torch.Tensor) -> torch.Tensor:
    """∇_w KL(softmax(w) ‖ softmax(w0)) = p ⊙ (log p − log q − KL), w0 held fixed."""
    log_p, log_q = F.log_softmax(w, -1), F.log_softmax(w0, -1)
    p = log_p.exp()
    return p * (log_p - log_q - (p * (log_p - log_q)).sum(-1, keepdim=True))


class FedDual(Algorithm):
    name = "feddual"
    default_optimizer = "adam"

    def __init__(self, run, kl_mode: Literal["paper", "code_constant"] = "paper",
                 beta_mode: Literal["per_epoch", "code_constant_half"] = "per_epoch",
                 adaptive_loss: bool = True, dynamic_aggregation: bool = True, dynamic: Selection = "output",
                 barycenter: Literal["reweighted", "free_support"] = "reweighted",
                 eps: Annotated[float, "(0, inf)"] = 1e-5, iterations: Annotated[int, "[1, inf)"] = 150,
                 grad_source: Literal["full_data", "pseudo_grad"] = "full_data",
                 weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, weighting)
        self.kl_mode, self.beta_mode, self.adaptive_loss = kl_mode, beta_mode, adaptive_loss
        self.dynamic_aggregation, self.barycenter, self.grad_source = dynamic_aggregation, barycenter, grad_source
        self.eps, self.iterations = eps, iterations
        self.tensors = None if run.layout is None else run.layout.select(dynamic, what="feddual: dynamic")
        self._index: dict[torch.device, torch.Tensor] = {}

    def index(self, device: torch.device) -> torch.Tensor:
        """The flat coordinates of the dynamic tensors, in flat order."""
        if self.tensors is None:
            raise ConfigError("feddual selects tensors of the model: build it with the model's layout (a "
                              "Federation does)")
        if device not in self._index:
            self._index[device] = self.run.layout.coordinates(self.tensors, device)
        return self._index[device]

    # ---- client
    def local_init(self, c):
        w, opt = super().local_init(c)
        beta = 0.5 if self.adaptive_loss else 0.0
        return w, {"opt": opt, "beta": torch.full((), beta, device=w.device),
                   "a_global": torch.full((), -1.0, device=w.device)}

    def epoch_start(self, w, local, c, data):
        """β = σ(A_local − A_global) on the client's training data (eq. 6); A_global at the first epoch's start."""
        if not self.adaptive_loss or self.beta_mode == "code_constant_half":
            return local
        _, accuracy = data.evaluate(w, c)
        a_global = torch.where(local["a_global"] < 0, accuracy, local["a_global"])
        return {**local, "a_global": a_global, "beta": torch.sigmoid(accuracy - a_global)}

    def local_step(self, w, local, c, grad_at):
        g, loss = grad_at(w)  # ∇ CE on the minibatch
        beta = local["beta"]
        d = (1 - beta) * g  # eq. 7; "code_constant": the KL is a constant of the weights
        if self.kl_mode == "paper":
            d = d + beta * kl_gradient(w, c.w0)
        w, opt = self.optimizer.step(w, d, local["opt"], c.lr)
        return w, {**local, "opt": opt}, loss

    def local_final(self, w, local, c, data):
        up = {"delta": w - c.w0, "beta": local["beta"], "a_global": local["a_global"]}
        if self.dynamic_aggregation:
            grad = data.gradient(w, c) if self.grad_source == "full_data" else c.w0 - w
            up["grad"] = grad[self.index(w.device)]
        return up, {}

    # ---- server
    def aggregate(self, w, state, ups, rnd):
        w_new = w + self.run.server_lr * (self.weights(rnd.sizes) @ ups["delta"])
        metrics = {"beta": ups["beta"], "a_global": ups["a_global"]}
        if self.dynamic_aggregation:
            start = 0
            for t in self.tensors:
                size = t.slice.stop - t.slice.start
                u = ups["grad"][:, start:start + size]
                start += size
                if self.barycenter == "reweighted":
                    b = wasserstein_barycenter(u, self.eps, self.iterations)
                    metrics[f"gamma:{t.name}"] = b.gamma  # float64: a γ below float32's range is not 0
                else:
                    b = free_support_barycenter(u)
                w_new[t.slice] = w[t.slice] - b.value.to(w.dtype)
        return w_new, state, metrics

    def bytes_up(self, ups):
        """θ_k and G_k on the dynamic tensors (β and A_global are the client's log, not traffic)."""
        sent = ups["delta"].shape[1] + (ups["grad"].shape[1] if "grad" in ups else 0)
        return sent * ups["delta"].element_size() * torch.ones(len(ups["delta"]))

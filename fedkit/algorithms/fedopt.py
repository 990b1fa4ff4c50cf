"""Server-side adaptive optimisers over the averaged client update Δ_t = (1/S) Σ Δ_i (clients run the plain client
optimizer): FedAdam (Reddi et al. 2021, Algorithm 2) and FedAMS (Wang, Lin, Chen 2022); algorithms-baselines §14–15.

    m_t = β1 m + (1 − β1) Δ_t,   v_t = β2 v + (1 − β2) Δ_t²
    FedAdam  x ← x + η m_t / (√v_t + τ)                      v initialised to τ² (Algorithm 2), no bias correction
    FedAMS   v̂_t = max(v̂, v_t, ε);  x ← x + η m_t / √v̂_t     (max stabilisation, ε inside the max)
η is ``server_lr``. ``bias_correction=True`` divides m by 1 − β1^t and the square root by √(1 − β2^t), as the
authors' experiment code (stock Keras Adam; FedCAMS' ``update_model_inplace``) does; with it FedAdam's v starts at
0 (``v_init="zero"``).
"""
from __future__ import annotations

from typing import Annotated, Literal

import torch

from .base import Algorithm


class FedAdam(Algorithm):
    name = "fedadam"

    def __init__(self, run, beta1: Annotated[float, "[0, 1)"] = 0.9, beta2: Annotated[float, "[0, 1)"] = 0.99,
                 tau: Annotated[float, "(0, inf)"] = 1e-3, bias_correction: bool = False,
                 v_init: Literal["tau2", "zero"] = "tau2", weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, weighting)
        self.beta1, self.beta2, self.tau, self.bias_correction, self.v_init = beta1, beta2, tau, bias_correction, v_init

    def init(self, w0, layout):
        v = torch.full_like(w0, self.tau**2 if self.v_init == "tau2" else 0.0)
        return {"m": torch.zeros_like(w0), "v": v, "t": torch.zeros((), device=w0.device)}

    def aggregate(self, w, state, ups, rnd):
        delta = self.weights(rnd.sizes) @ ups["delta"]
        t = state["t"] + 1
        m = self.beta1 * state["m"] + (1 - self.beta1) * delta
        v = self.beta2 * state["v"] + (1 - self.beta2) * delta * delta
        step, extra = self.step(m, v, state, t)
        return w + self.run.server_lr * step, {"m": m, "v": v, "t": t, **extra}, {}

    def corrections(self, t):
        """(1 − β1^t, √(1 − β2^t)) with bias correction, else (1, 1)."""
        if not self.bias_correction:
            return 1.0, 1.0
        return 1 - self.beta1**t, (1 - self.beta2**t).sqrt()

    def step(self, m, v, state, t):
        c1, c2 = self.corrections(t)
        return (m / c1) / (v.sqrt() / c2 + self.tau), {}


class FedAMS(FedAdam):
    name = "fedams"

    def __init__(self, run, beta1: Annotated[float, "[0, 1)"] = 0.9, beta2: Annotated[float, "[0, 1)"] = 0.99,
                 eps: Annotated[float, "(0, inf)"] = 1e-3, bias_correction: bool = False,
                 weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, beta1, beta2, eps, bias_correction, "zero", weighting)

    def init(self, w0, layout):
        return {**super().init(w0, layout), "v_max": torch.zeros_like(w0)}

    def step(self, m, v, state, t):
        v_max = torch.maximum(state["v_max"], v).clamp_min(self.tau)  # max(v̂, v_t, ε)
        c1, c2 = self.corrections(t)
        return (m / c1) / (v_max.sqrt() / c2), {"v_max": v_max}

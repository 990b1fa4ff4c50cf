"""FedAvg-M (Cheng, Huang, Wu, Yuan, ICLR 2024; = FedCM): a global direction u, broadcast with the model, is mixed
into every local step (algorithms-baselines §12):

    client   d_k = β g_k + (1 − β) u_t,   y ← y − η_l d_k          (β = 1 is FedAvg)
    server   u_{t+1} = Σ_i p_i (x_t − y_i) / (η_l K_i)              (a mean gradient, per unit lr and step)
             x_{t+1} = x_t + η_g Σ_i p_i (y_i − x_t)               (η_g = ``server_lr`` in delta units)
u_0 = 0, so round 1 steps with β η_l. No extra upload; u doubles the download.
"""
from __future__ import annotations

from typing import Annotated, Literal

import torch

from .base import Algorithm


class FedAvgM(Algorithm):
    name = "fedavg_m"

    def __init__(self, run, beta: Annotated[float, "(0, 1]"] = 0.1, weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, weighting)
        self.beta = beta

    def init(self, w0, layout):
        return {"u": torch.zeros_like(w0)}

    def message(self, w, state, rnd):
        return {"u": state["u"].expand(len(rnd.clients), -1)}

    def direction(self, g, w, c):
        return self.beta * g + (1 - self.beta) * c.recv["u"]

    def aggregate(self, w, state, ups, rnd):
        p = self.weights(rnd.sizes)
        w_new = w + self.run.server_lr * (p @ ups["delta"])
        u = -(p / (rnd.lr * rnd.steps.clamp_min(1))) @ ups["delta"]
        return w_new, {"u": u}, {}

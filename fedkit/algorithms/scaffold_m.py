"""SCAFFOLD-M (Cheng, Huang, Wu, Yuan, ICLR 2024, Alg. 2): FedAvg-M's global direction u with SCAFFOLD's control
variates for partial participation (algorithms-baselines §13; the exact local rule is an [assumption] there):

    client   d_k = β (g_k − c_i + c) + (1 − β) u_t,   y ← y − η_l d_k;   c_i⁺ = (1/K_i) Σ_k g_k
    server   x and u as FedAvg-M;   c ← c + (1/N) Σ_{i∈S} (c_i⁺ − c_i)       (c stays the mean of every c_i)
Down: x, u, c; up: Δ_i, Δc_i.
"""
from __future__ import annotations

import torch

from .fedavgm import FedAvgM


class ScaffoldM(FedAvgM):
    name = "scaffold_m"

    def init(self, w0, layout):
        return {"u": torch.zeros_like(w0), "c": torch.zeros_like(w0)}

    def client_init(self, w0):
        return {"c_i": torch.zeros_like(w0)}

    def message(self, w, state, rnd):
        n = len(rnd.clients)
        return {"u": state["u"].expand(n, -1), "c": state["c"].expand(n, -1)}

    def local_init(self, c):
        w, opt = super().local_init(c)
        return w, {"opt": opt, "gradients": torch.zeros_like(w)}

    def local_step(self, w, local, c, grad_at):
        g, loss = grad_at(w)
        d = self.beta * (g - c.kept["c_i"] + c.recv["c"]) + (1 - self.beta) * c.recv["u"]
        w, opt = self.optimizer.step(w, d, local["opt"], c.lr)
        return w, {"opt": opt, "gradients": local["gradients"] + g}, loss

    def local_final(self, w, local, c, data):
        c_new = local["gradients"] / c.steps
        return {"delta": w - c.w0, "dc": c_new - c.kept["c_i"]}, {"c_i": c_new}

    def aggregate(self, w, state, ups, rnd):
        w_new, server, metrics = super().aggregate(w, state, ups, rnd)
        return w_new, {**server, "c": state["c"] + ups["dc"].sum(0) / self.run.num_clients}, metrics

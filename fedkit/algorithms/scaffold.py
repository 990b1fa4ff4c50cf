"""SCAFFOLD (Karimireddy et al. 2020), option II control variates, as used in its experiments.

Client step:  y ← y − η_l (g_i(y) + α(c − c_i))           (SCAFFOLD Alg. 1 line 10; α = 1 is the original)
New variate:  c_i⁺ = c_i − c + (x_t − y_i) / (K_i η_l)       (Alg. 1 line 12, option II; K_i = steps taken)
Server:       x ← x + η_g Σ p_i Δy_i,  c ← c + (1/N) Σ_{i∈S} Δc_i   (Alg. 1 lines 16–17)
"""
import torch

from ..errors import ConfigError
from .base import Algorithm


class Scaffold(Algorithm):
    name = "scaffold"

    def __init__(self, alpha: float = 1.0, weighting: str = "uniform"):
        super().__init__(weighting)
        if not alpha >= 0:
            raise ConfigError(f"scaffold: alpha must be ≥ 0, got {alpha}")
        self.alpha = alpha

    def init(self, w0):
        return {"c": torch.zeros_like(w0), "c_i": w0.new_zeros(self.num_clients, w0.numel())}

    def message(self, w, state, clients):
        return {"c": state["c"].expand(len(clients), -1)}

    def client_state(self, state, clients):
        return {"c_i": state["c_i"][clients]}

    def direction(self, g, w, w0, recv):
        return g + self.alpha * (recv["c"] - recv["c_i"])

    def upload(self, w0, w, recv, steps, local):
        c_new = recv["c_i"] - recv["c"] + (w0 - w) / (steps * self.lr)
        return {"delta": w - w0, "dc": c_new - recv["c_i"]}

    def aggregate(self, w, state, ups, clients, sizes):
        w_new = w + self.server_lr * (self.weights(sizes) @ ups["delta"])
        c_i = state["c_i"].index_add(0, clients, ups["dc"])
        c = state["c"] + ups["dc"].sum(0) / self.num_clients
        return w_new, {"c": c, "c_i": c_i}, {}

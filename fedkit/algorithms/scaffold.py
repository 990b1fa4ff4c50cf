"""SCAFFOLD (Karimireddy et al. 2020), option II control variates, as used in its experiments.

Client step:  y ← y − η_l (g_i(y) + α(c − c_i))           (SCAFFOLD Alg. 1 line 10; α = 1 is the original)
New variate:  c_i⁺ = c_i − c + (x_t − y_i) / (K_i η_l)       (Alg. 1 line 12, option II; K_i = steps taken)
Server:       x ← x + η_g Σ p_i Δy_i,  c ← c + (1/N) Σ_{i∈S} Δc_i   (Alg. 1 lines 16–17)
``tailored=True`` is TACO's SCAFFOLD variant (TACO Fig. 6): the correction becomes α(1 − α_i^t)(c − c_i), with
α_i^t TACO's eq. 7 computed from this method's own uploads (algorithms-seed §1.8).
"""
import torch

from ..errors import ConfigError
from .base import Algorithm
from .taco import tailored_coefficients


class Scaffold(Algorithm):
    name = "scaffold"

    def __init__(self, alpha: float = 1.0, weighting: str = "uniform", tailored: bool = False, alpha0: float = 0.1):
        super().__init__(weighting)
        if not alpha >= 0:
            raise ConfigError(f"scaffold: alpha must be ≥ 0, got {alpha}")
        self.alpha, self.tailored, self.alpha0 = alpha, tailored, alpha0

    def init(self, w0):
        state = {"c": torch.zeros_like(w0), "c_i": w0.new_zeros(self.num_clients, w0.numel())}
        if self.tailored:
            state["alpha"] = w0.new_full((self.num_clients,), self.alpha0)
        return state

    def message(self, w, state, clients):
        sent = {"c": state["c"].expand(len(clients), -1)}
        if self.tailored:
            sent["alpha"] = state["alpha"][clients]
        return sent

    def client_state(self, state, clients):
        return {"c_i": state["c_i"][clients]}

    def direction(self, g, w, w0, recv):
        coefficient = self.alpha * (1 - recv["alpha"]) if self.tailored else self.alpha
        return g + coefficient * (recv["c"] - recv["c_i"])

    def upload(self, w0, w, recv, steps, local):
        c_new = recv["c_i"] - recv["c"] + (w0 - w) / (steps * self.lr)
        return {"delta": w - w0, "dc": c_new - recv["c_i"]}

    def aggregate(self, w, state, ups, clients, sizes):
        w_new = w + self.server_lr * (self.weights(sizes) @ ups["delta"])
        c_i = state["c_i"].index_add(0, clients, ups["dc"])
        c = state["c"] + ups["dc"].sum(0) / self.num_clients
        if not self.tailored:
            return w_new, {"c": c, "c_i": c_i}, {}
        alpha = tailored_coefficients(-ups["delta"])
        return w_new, {"c": c, "c_i": c_i, "alpha": state["alpha"].index_copy(0, clients, alpha)}, {"alpha": alpha}

"""SCAFFOLD (Karimireddy et al. 2020), option II control variates, as used in its experiments.

Client step:  y ← y − η_l (g_i(y) + α(c − c_i))           (SCAFFOLD Alg. 1 line 10; α = 1 is the original)
New variate:  c_i⁺ = c_i − c + (x_t − y_i) / (K_i η_l)       (Alg. 1 line 12, option II; K_i = steps taken)
Server:       x ← x + η_g Σ p_i Δy_i,  c ← c + (1/N) Σ_{i∈S} Δc_i   (Alg. 1 lines 16–17)
Each client holds its own c_i (kept between its rounds) and uploads Δy_i and Δc_i.
Under momentum or Adam (SCAFFOLD defines plain SGD only) ``correction_at`` places h = α(c − c_i): "after_step"
(default, NIID-Bench's) steps the optimizer on g and then subtracts η_l h; "in_optimizer" feeds g + h to it. c_i⁺
counts K_i η_l in both (steps taken × the round's η_l, not a momentum-effective rate): README, "Corrections under
momentum and Adam".
"""
from typing import Annotated, Literal

import torch

from .base import Algorithm, CorrectionAt


class Scaffold(Algorithm):
    name = "scaffold"

    def __init__(self, run, alpha: Annotated[float, "[0, inf)"] = 1.0,
                 weighting: Literal["data", "uniform"] = "uniform", correction_at: CorrectionAt = "after_step"):
        super().__init__(run, weighting)
        self.alpha, self.correction_at = alpha, correction_at

    def init(self, w0, layout):
        return {"c": torch.zeros_like(w0)}

    def client_init(self, w0):
        return {"c_i": torch.zeros_like(w0)}

    def message(self, w, state, rnd):
        return {"c": state["c"].expand(len(rnd.clients), -1)}

    def correction_term(self, w, c):
        return self.alpha * (c.recv["c"] - c.kept["c_i"])  # Alg. 1 line 10

    def _c_new(self, w, c):
        return c.kept["c_i"] - c.recv["c"] + (c.w0 - w) / (c.steps * c.lr)

    def upload(self, w, local, c):
        return {"delta": w - c.w0, "dc": self._c_new(w, c) - c.kept["c_i"]}

    def keep(self, w, local, c):
        return {"c_i": self._c_new(w, c)}

    def aggregate(self, w, state, ups, rnd):
        w_new = w + self.run.server_lr * (self.weights(rnd.sizes) @ ups["delta"])
        return w_new, {"c": state["c"] + ups["dc"].sum(0) / self.run.num_clients}, {}

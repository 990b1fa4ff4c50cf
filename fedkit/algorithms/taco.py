"""TACO: Tackling Over-correction with Tailored Adaptive Correction (Liu et al., ICDCS 2025), Algorithm 2.

TACO writes uploads as "local gradients" Δ_i = w_{i,0} − w_{i,K} (eq. 5), the negative of fedkit's
delta = w_{i,K} − w_{i,0}. Per round, with A_t the clients not expelled:
  client step   w ← w − η_l (g + γ (1 − α_i^t) Δ_t)                                   (eq. 8)
  coefficient   α_i^{t+1} = (1 − ‖Δ_i‖ / Σ_j ‖Δ_j‖) · max(cos(Δ_i, mean_j Δ_j), 0)    (eq. 7)
  aggregation   Δ_{t+1} = Σ α_i Δ_i / (K η_l Σ α_i)                                    (eq. 9)
  global step   w_{t+1} = w_t − η_g Δ_{t+1}                                            (eq. 6)
  freeloaders   α_i ≥ κ counts against client i; after λ counts it is expelled       (eq. 10)
  output        z_t = w_t + (1 − ᾱ_t)(w_t − w_{t−1}),  ᾱ_t = mean of the α_i^t         (eqs. 14–15)
fedkit's server_lr is η_g / (K η_l), so the paper's η_g = K η_l is server_lr = 1 (the default).
TACO defines plain SGD; under momentum or Adam ``correction_at`` places eq. 8's term h = γ(1 − α_i)Δ_t ("after_step",
the default: the optimizer steps on g, then w ← w − η_l h; "in_optimizer": on g + h).
"""
from __future__ import annotations

from typing import Annotated, Literal

import torch

from ..errors import ConfigError
from .base import Algorithm, CorrectionAt
from .tailored import tailored_coefficients


def tailored_mean(d: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """Σ α_i d_i / Σ α_i (the α-weighted part of eq. 9); uniform when every α_i is 0."""
    weights = alpha / alpha.sum() if alpha.sum() > 0 else torch.full_like(alpha, 1 / len(alpha))
    return weights @ d


class Taco(Algorithm):
    name = "taco"

    def __init__(self, run, gamma: Annotated[float, "[0, inf)"] | None = None,
                 kappa: Annotated[float, "[0, 1]"] = 0.6, lam: Annotated[int, "[1, inf)"] | None = None,
                 alpha0: Annotated[float, "[0, 1]"] = 0.1,
                 correction: Literal["tailored", "uniform", "none"] = "tailored", tailored_aggregation: bool = True,
                 detect: bool = True, expel_rule: Literal[">=", ">"] = ">=",
                 alpha_bar: Literal["round", "remaining"] = "round", correction_at: CorrectionAt = "after_step"):
        """gamma None = 1/K and lam None = ⌈T/5⌉ counts (the paper's λ = T/5, rounded up to whole rounds: 10 at
        T = 50, 2 at T = 6). ``kappa`` lies in [0, 1] like every α_i.

        ``correction``: "tailored" (eq. 8), "uniform" (every client γΔ_t, the over-correcting scheme of Fig. 1)
        or "none" (the ablation's ✗); ``tailored_aggregation`` False aggregates uniformly (Table VI).
        ``alpha_bar``: eq. 14's ᾱ_t for z_t over this round's clients ("round") or over those of them not expelled
        by it ("remaining"; eq. 14 does not say which after an expulsion; the round's mean if none remains).
        """
        super().__init__(run, "uniform")
        if run.local_steps is None:
            raise ConfigError("taco needs a fixed number of local steps K (local_steps), got local_epochs "
                              f"{run.local_epochs}")
        self.gamma = 1 / run.local_steps if gamma is None else gamma
        self.lam = -(-run.rounds // 5) if lam is None else lam
        self.kappa, self.alpha0, self.correction = kappa, alpha0, correction
        self.tailored_aggregation, self.detect, self.expel_rule = tailored_aggregation, detect, expel_rule
        self.alpha_bar, self.correction_at = alpha_bar, correction_at

    def init(self, w0, layout):
        n = self.run.num_clients
        return {"alpha": w0.new_full((n,), self.alpha0), "count": w0.new_zeros(n),
                "expelled": torch.zeros(n, dtype=torch.bool, device=w0.device),
                "Delta": torch.zeros_like(w0), "w_prev": w0.clone(), "alpha_bar": w0.new_tensor(self.alpha0)}

    def eligible(self, state):
        return ~state["expelled"]

    def message(self, w, state, rnd):
        # the global gradient Δ_t and the client's own α_i^t (Algorithm 2 line 13; eq. 8 needs Δ_t too)
        return {"Delta": state["Delta"].expand(len(rnd.clients), -1), "alpha": state["alpha"][rnd.clients]}

    def correction_term(self, w, c):
        if self.correction == "none":
            return None
        if self.correction == "uniform":
            return self.gamma * c.recv["Delta"]
        return self.gamma * (1 - c.recv["alpha"]) * c.recv["Delta"]  # eq. 8

    def aggregate(self, w, state, ups, rnd):
        d = -ups["delta"]  # eq. 5 sign
        alpha = tailored_coefficients(d)  # eq. 7
        mean = tailored_mean(d, alpha) if self.tailored_aggregation else self.weights(rnd.sizes) @ d
        w_new = w - self.run.server_lr * mean  # eqs. 6 and 9 with η_g = server_lr · K η_l
        count, expelled = state["count"], state["expelled"]
        if self.detect:  # eq. 10
            count = count.index_add(0, rnd.clients, (alpha >= self.kappa).to(count.dtype))
            over = count >= self.lam if self.expel_rule == ">=" else count > self.lam
            expelled = expelled | over
        new = {"alpha": state["alpha"].index_copy(0, rnd.clients, alpha), "count": count, "expelled": expelled,
               "Delta": mean / (self.run.local_steps * rnd.lr), "w_prev": w,
               "alpha_bar": self._mean(alpha, expelled[rnd.clients])}
        return w_new, new, {"alpha": alpha, "count": count[rnd.clients], "expelled": expelled[rnd.clients].float()}

    def _mean(self, alpha, expelled):
        """ᾱ_t of eq. 14 over this round's clients, or over those still in."""
        if self.alpha_bar == "remaining" and bool((~expelled).any()):
            return alpha[~expelled].mean()
        return alpha.mean()

    def outputs(self, w, state):
        return {"z": w + (1 - state["alpha_bar"]) * (w - state["w_prev"])}  # eq. 15

"""FAdamGC (federated Adam with pre-estimation gradient correction) and FA-NT (naive tracking), as reconstructed
in algorithms-seed §3.2–3.3 (the paper's Algorithm 1 was lost; every assumption there is a switch here).

Client i (Adam from the client optimizer: no bias correction in the paper, moments restarted every round):
    FAdamGC  ĝ_k = g_k + y − y_i, Adam moments of ĝ_k, x ← x − η_l m ⊘ (√v + ε)        (correction before Adam)
    FA-NT    Adam moments of g_k, d_k = m ⊘ (√v + ε), x ← x − η_l (d_k + y − y_i)        (correction after Adam)
Selective tracking: a seeded subset T_t of τ of the sampled clients refreshes its buffer, y_i ← (1/K) Σ_k g_k
(FAdamGC: raw gradients; FA-NT: Σ d_k, SCAFFOLD's option II) and uploads y_i⁺ − y_i; the others upload models only.
Server: x ← x + η_g (1/S) Σ_S Δ_i;  y ← y + (1/N) Σ_{T_t} (y_i⁺ − y_i), which keeps y the mean of all y_i.
LocalAdam (the baseline without tracking) is the same client Adam with plain averaging: only the model travels.
"""
from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
import torch

from ..errors import ConfigError
from ..optim import Adam
from .base import Algorithm


class LocalAdam(Algorithm):
    """Adam on the clients (the run's optimizer: FAdamGC's setting has no bias correction), the server averages."""

    name = "local_adam"
    default_optimizer = "adam"

    def __init__(self, run, weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, weighting)
        if not isinstance(run.optimizer, Adam):
            raise ConfigError(f"{self.name} runs Adam on the clients, got optimizer {run.optimizer!r}")


class FAdamGC(LocalAdam):
    name = "fadamgc"
    correction: Literal["before", "after"] = "before"

    def __init__(self, run, tracked: Annotated[int, "[1, inf)"] | None = None, reset_moments: bool = True,
                 weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, weighting)
        if tracked is not None and tracked > run.clients_per_round:
            raise ConfigError(f"{self.name}: tracked={tracked} exceeds the {run.clients_per_round} clients a round")
        self.tracked, self.reset_moments = tracked, reset_moments

    def init(self, w0, layout):
        return {"y": torch.zeros_like(w0)}

    def client_init(self, w0):
        return {"y_i": torch.zeros_like(w0), **self._kept_moments(self.optimizer.init(w0))}

    def _kept_moments(self, opt):
        """The client Adam's state as kept tensors (reset_moments=False; kept state is flat: "opt_m", ...)."""
        return {} if self.reset_moments else {f"opt_{k}": v for k, v in opt.items()}

    def message(self, w, state, rnd):
        """y, and which of the sampled clients track this round (T_t, drawn from the run's seed and t)."""
        n = len(rnd.clients)
        chosen = np.random.default_rng([self.run.seed, 7, rnd.t]).choice(n, size=min(n, self.tau), replace=False)
        track = torch.zeros(n, device=w.device)
        track[torch.as_tensor(chosen, device=w.device, dtype=torch.long)] = 1.0
        return {"y": state["y"].expand(n, -1), "track": track}

    @property
    def tau(self) -> int:
        return self.run.clients_per_round if self.tracked is None else self.tracked

    def local_init(self, c):
        opt = self.optimizer.init(c.w0) if self.reset_moments else {k[4:]: v for k, v in c.kept.items()
                                                                     if k.startswith("opt_")}
        return c.w0, {"opt": opt, "tracked": torch.zeros_like(c.w0)}

    def local_step(self, w, local, c, grad_at):
        g, loss = grad_at(w)
        correction = c.recv["y"] - c.kept["y_i"]
        if self.correction == "before":  # pre-estimation: the moments see the corrected gradient
            w_new, opt = self.optimizer.step(w, g + correction, local["opt"], c.lr)
            tracked = g
        else:  # naive tracking: Adam's direction d_k of the raw gradient, then the correction
            adam, opt = self.optimizer.step(w, g, local["opt"], c.lr)
            tracked = (w - adam) / c.lr
            w_new = adam - c.lr * correction
        return w_new, {"opt": opt, "tracked": local["tracked"] + tracked}, loss

    def _y_new(self, local, c):
        """y_i⁺ for a tracking client (the mean of what it tracked over its K_i steps), y_i for the others."""
        track = c.recv["track"]
        return track * local["tracked"] / c.steps + (1 - track) * c.kept["y_i"]

    def local_final(self, w, local, c, data):
        y_new = self._y_new(local, c)
        keep = {"y_i": y_new, **self._kept_moments(local["opt"])}
        return {"delta": w - c.w0, "dy": y_new - c.kept["y_i"], "track": c.recv["track"]}, keep

    def aggregate(self, w, state, ups, rnd):
        w_new = w + self.run.server_lr * (self.weights(rnd.sizes) @ ups["delta"])
        return w_new, {"y": state["y"] + ups["dy"].sum(0) / self.run.num_clients}, {"tracked": ups["track"]}

    def bytes_up(self, ups):
        """The model update, and y_i⁺ − y_i from the tracking clients only."""
        d = ups["delta"].shape[1]
        return (d + d * ups["track"].cpu()) * ups["delta"].element_size()


class FANT(FAdamGC):
    name = "fa_nt"
    correction = "after"

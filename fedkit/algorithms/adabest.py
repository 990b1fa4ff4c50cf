"""AdaBest (Varno et al., ECCV 2022): client drift estimates with staleness decay, and a server-side bias correction
from the last two averages, no history kept (algorithms-seed §4.6, algorithms-baselines §17).

Client i keeps h_i (0 at first) and the round t_i it last trained in (0: never). In round t it runs SGD on
  F_i(θ) − ⟨h_i, θ⟩                 (gradient ∇F_i − h_i)
and afterwards  h_i ← h_i / (t − t_i) + μ (θ^t − θ_i^{t,U}),  t_i ← t
(μ inside h_i as in the spec's first form; the authors' fedsim scales it in the step instead: the same up to μ's
scale). Server, with θ̄^t = (1/S) Σ θ_i^{t,U} the plain mean of the received models:
  h = β (θ̄^{t−1} − θ̄^t),   θ^{t+1} = θ̄^t − h
(h = 0 in the first round: no earlier mean exists). θ̄^t is reported as the output ``avg``. No server learning
rate: a ``server_lr`` other than 1 is refused.
"""
from typing import Annotated

import torch

from ..errors import ConfigError
from .base import Algorithm


class AdaBest(Algorithm):
    name = "adabest"

    def __init__(self, run, mu: Annotated[float, "[0, inf)"] = 0.02, beta: Annotated[float, "[0, 1]"] = 0.8):
        super().__init__(run, "uniform")
        if run.server_lr != 1.0:
            raise ConfigError(f"adabest has no server learning rate, got server_lr={run.server_lr}")
        self.mu, self.beta = mu, beta

    def init(self, w0, layout):
        return {"avg": w0.clone(), "started": torch.zeros((), device=w0.device)}

    def client_init(self, w0):
        return {"h_i": torch.zeros_like(w0), "last": torch.zeros((), device=w0.device)}

    def objective(self, data, w, c, batch):
        return data - (c.kept["h_i"] * w).sum()

    def keep(self, w, local, c):
        stale = c.t - c.kept["last"]  # rounds since the client last trained (t when it never did: h_i = 0 then)
        return {"h_i": c.kept["h_i"] / stale + self.mu * (c.w0 - w), "last": torch.full_like(c.kept["last"], c.t)}

    def aggregate(self, w, state, ups, rnd):
        avg = w + ups["delta"].mean(0)  # θ̄^t
        h = state["started"] * self.beta * (state["avg"] - avg)
        return avg - h, {"avg": avg, "started": torch.ones_like(state["started"])}, {}

    def outputs(self, w, state):
        return {"avg": state["avg"]}

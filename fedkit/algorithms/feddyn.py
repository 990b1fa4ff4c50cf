"""FedDyn (Acar et al., ICLR 2021), dynamic regularisation, as its paper's Algorithm 1 states it.

Client i, receiving θ_t, minimises  L_i(θ) − ⟨g_i, θ⟩ + (α/2)‖θ − θ_t‖²      (Alg. 1 line 7)
  g_i = ∇L_i(θ_i^prev), the client's gradient memory (0 before its first round), kept between its rounds;
after training                       g_i ← g_i − α(θ_i − θ_t)                (line 8)
Server, N clients, P_t sampled:      h ← h − α (1/N) Σ_{i∈P_t} (θ_i − θ_t)    (line 10)
                                     θ_{t+1} = (1/|P_t|) Σ_{i∈P_t} θ_i − h/α  (line 11)
The plain average of the active clients' models is reported too (``active``), as the official code logs it.
Line 11 has no server learning rate: a ``server_lr`` other than 1 is refused.
Not copied from the official code: its per-client α scaling and gradient clipping (algorithms-baselines §9).
"""
from typing import Annotated

import torch

from ..errors import ConfigError
from .base import Algorithm


class FedDyn(Algorithm):
    name = "feddyn"

    def __init__(self, run, alpha: Annotated[float, "(0, inf)"] = 0.01):
        super().__init__(run, "uniform")
        if run.server_lr != 1.0:
            raise ConfigError(f"feddyn has no server learning rate (its Alg. 1 line 11), got server_lr={run.server_lr}")
        self.alpha = alpha

    def init(self, w0, layout):
        return {"h": torch.zeros_like(w0), "active": w0.clone()}

    def client_init(self, w0):
        return {"g_i": torch.zeros_like(w0)}

    def objective(self, data, w, c, batch):
        return data - (c.kept["g_i"] * w).sum() + 0.5 * self.alpha * (w - c.w0).pow(2).sum()

    def keep(self, w, local, c):
        return {"g_i": c.kept["g_i"] - self.alpha * (w - c.w0)}

    def aggregate(self, w, state, ups, rnd):
        h = state["h"] - self.alpha * ups["delta"].sum(0) / self.run.num_clients
        active = w + ups["delta"].mean(0)
        return active - h / self.alpha, {"h": h, "active": active}, {}

    def outputs(self, w, state):
        return {"active": state["active"]}

"""FLTrust (Cao, Fang, Liu, Gong, NDSS 2021) as DRAG's Figs. 5–8 use it (algorithms-baselines §18).

The server trains a copy of x_t on its root data with the clients' own local procedure and takes g_0 = its update.
Each upload g_i gets the trust score TS_i = max(0, cos(g_i, g_0)) (ReLU-clipped cosine) and is rescaled to ‖g_0‖:
  x_{t+1} = x_t + η_g Σ_i TS_i (‖g_0‖/‖g_i‖) g_i / Σ_j TS_j
(FLTrust Alg. 2). If every score is 0 the model stays where it is. Logged per client: ``trust`` (TS_i).
"""
from typing import Annotated

import torch

from .base import Algorithm
from .drag import cosines


class FLTrust(Algorithm):
    name = "fltrust"

    def __init__(self, run, root_samples: Annotated[int, "[1, inf)"] = 3000):
        super().__init__(run, "uniform")
        self.root_samples = root_samples

    def aggregate(self, w, state, ups, rnd):
        g, g0 = ups["delta"], rnd.root_delta
        trust = cosines(g, g0)[0].clamp_min(0.0)  # ReLU-clipped cosine (a zero upload has cosine 0)
        norms = torch.linalg.vector_norm(g, dim=1)
        scaled = g * (torch.linalg.vector_norm(g0) / torch.where(norms > 0, norms, torch.ones_like(norms)))[:, None]
        total = trust.sum()
        step = (trust @ scaled) / torch.where(total > 0, total, torch.ones_like(total))  # 0 when Σ TS = 0
        return w + self.run.server_lr * step, state, {"trust": trust}

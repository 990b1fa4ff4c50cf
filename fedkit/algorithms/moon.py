"""MOON (Li, He, Song, CVPR 2021), model-contrastive federated learning.

Client loss (MOON eqs. 3–4), z the representation the output layer reads (with ``model_args={"projection": 256}``
on the CNN: the original's projection head), z_glob at the received model, z_prev at the client's previous local
model (both fixed):
    ℓ_con = −log[exp(cos(z, z_glob)/τ) / (exp(cos(z, z_glob)/τ) + exp(cos(z, z_prev)/τ))]
    loss  = CE + μ · mean over the batch of ℓ_con
Each client keeps its last local model as "previous" (the initial model before its first round: then
z_prev = z_glob in round 1 and ℓ_con = log 2 has no gradient, like the original's empty pool). Server: FedAvg.
"""
from typing import Annotated, Literal

import torch
import torch.nn.functional as F

from .base import Algorithm


class Moon(Algorithm):
    name = "moon"
    needs_features = True

    def __init__(self, run, mu: Annotated[float, "[0, inf)"] = 5.0, tau: Annotated[float, "(0, inf)"] = 0.5,
                 weighting: Literal["data", "uniform"] = "data"):
        super().__init__(run, weighting)
        self.mu, self.tau = mu, tau

    def client_init(self, w0):
        return {"prev": w0.clone()}

    def objective(self, data, w, c, batch):
        if not self.mu:
            return data
        z_glob = batch.model(c.w0)[1].detach()
        z_prev = batch.model(c.kept["prev"])[1].detach()
        logits = torch.stack([F.cosine_similarity(batch.features, z_glob, dim=-1),
                              F.cosine_similarity(batch.features, z_prev, dim=-1)], dim=-1) / self.tau
        contrastive = torch.logsumexp(logits, dim=-1) - logits[..., 0]  # eq. 3, the positive pair first
        return data + self.mu * batch.mean(contrastive)  # eq. 4

    def keep(self, w, local, c):
        return {"prev": w}

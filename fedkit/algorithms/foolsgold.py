"""FoolsGold (Fung, Yoon, Beschastnikh, RAID 2020): down-weight clients whose updates look alike (sybils).

Clients are FedAvg clients; only the server's weighting changes. Step numbers refer to the FoolsGold algorithm
as written out in research/algorithms-baselines.md §4.1 (which follows the authors' code).

``variant="original"`` (canonical, §4.1), over the sampled clients S_t:
  1. H_i ← H_i + Δ_i                      history of every client's updates (server table [N, f])
  2. cs_ij = cos(H_i, H_j), cs_ii = 0;  v_i = max_j cs_ij
  3. pardoning: cs_ij ← cs_ij · v_i / v_j  wherever v_i < v_j
  4. a_i = clip(1 − max_j cs_ij, 0, 1)
  5. a ← a / max_j a_j;  a_i = 1 → 0.99
  6. a_i ← clip(κ (ln(a_i / (1 − a_i)) + 0.5), 0, 1)   (κ = ``confidence``)
  7. x_{t+1} = x_t + η_g Σ a_i Δ_i / Σ a_i   (normalised, §4.1 "aggregation disagreement"; all a_i = 0 → uniform)

Similarity features (``features``): "output" (default) = the output-layer weight matrix, taken as the LAST 2-D
parameter tensor of the model's layout (the authors' deep-learning code uses the output layer's weight; every
fedkit classifier ends in a Linear layer, so this is its weight, the bias excluded); "all" = every parameter.

``variant="taco"`` (TACO Alg. 1 line 10 as repaired in §4.2): ρ_i = max(0, cos(mean_j Δ_j, Δ_i)) on the full
update, x_{t+1} = x_t + η_g Σ ρ_i Δ_i / Σ ρ_i (Σ ρ_i = 0 → uniform); no history.

Logged per client: ``fg_weight``, the normalised weight its Δ_i got (the weights of a round sum to 1).
"""
from typing import Annotated, Literal

import torch

from ..errors import ConfigError
from .base import Algorithm


def _unit_rows(x: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit length (zero rows stay zero, so their cosines are 0)."""
    return x / torch.linalg.vector_norm(x, dim=1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)


def _normalise_or_uniform(a: torch.Tensor) -> torch.Tensor:
    """a / Σ a, or the uniform weights 1/n if every a_i is 0."""
    total = a.sum()
    uniform = torch.full_like(a, 1.0 / len(a))
    return torch.where(total > 0, a / torch.where(total > 0, total, torch.ones_like(total)), uniform)


def foolsgold_weights(histories: torch.Tensor, confidence: float = 1.0) -> torch.Tensor:
    """Steps 2–6 of FoolsGold on the histories [n, f] of the sampled clients: weights a_i in [0, 1]."""
    n = len(histories)
    eye = torch.eye(n, dtype=torch.bool, device=histories.device)
    unit = _unit_rows(histories)
    cs = (unit @ unit.T).masked_fill(eye, 0.0)  # step 2, cs_ii = 0
    v = cs.max(dim=1).values  # ≥ 0 because the zero diagonal is in every row
    # step 3 (pardoning): v_i < v_j implies v_j > 0, so the ratio is finite where it is used
    ratio = v[:, None] / torch.where(v[None, :] > 0, v[None, :], torch.ones_like(v[None, :]))
    cs = torch.where(v[:, None] < v[None, :], cs * ratio, cs)
    a = (1.0 - cs.max(dim=1).values).clamp(0.0, 1.0)  # step 4
    top = a.max()  # step 5; top = 0 (every client has an identical twin) leaves a = 0 → uniform later
    a = a / torch.where(top > 0, top, torch.ones_like(top))
    a = torch.where(a == 1.0, torch.full_like(a, 0.99), a)
    # step 6: a = 0 gives ln 0 = −inf → 0 after the clip
    return (confidence * (torch.log(a / (1.0 - a)) + 0.5)).clamp(0.0, 1.0)


class FoolsGold(Algorithm):
    name = "foolsgold"

    def __init__(self, run, variant: Literal["original", "taco"] = "original",
                 features: Literal["output", "all"] = "output", confidence: Annotated[float, "(0, inf)"] = 1.0):
        super().__init__(run, "uniform")  # no p_i: the FoolsGold weights replace them (BatchNorm statistics: uniform)
        self.variant, self.features, self.confidence = variant, features, confidence

    def init(self, w0, layout):
        if self.variant == "taco":
            return {}
        self.feature_slice = slice(None)
        if self.features == "output":  # the last 2-D parameter tensor: the output layer's weight
            weights = [t for t in layout.tensors if len(t.shape) == 2]
            if not weights:
                raise ConfigError("foolsgold: features='output' needs a 2-D (output-layer weight) parameter "
                                  "tensor, but the model has none; use features='all'")
            self.feature_slice = weights[-1].slice
        return {"history": w0[self.feature_slice].new_zeros(self.run.num_clients, w0[self.feature_slice].numel())}

    def aggregate(self, w, state, ups, rnd):
        delta = ups["delta"]
        if self.variant == "taco":
            # ρ_i = max(0, cos(mean_j Δ_j, Δ_i))  (§4.2; TACO Alg. 1 line 10 with the plain mean as reference)
            reference = _unit_rows(delta.mean(0, keepdim=True))[0]
            p = _normalise_or_uniform((_unit_rows(delta) @ reference).clamp_min(0.0))
        else:
            history = state["history"].index_add(0, rnd.clients, delta[:, self.feature_slice])  # step 1
            state = {"history": history}
            p = _normalise_or_uniform(foolsgold_weights(history[rnd.clients], self.confidence))
        # step 7 / TACO: x_{t+1} = x_t + η_g Σ a_i Δ_i / Σ a_i
        return w + self.run.server_lr * (p @ delta), state, {"fg_weight": p}

"""DRAG, divergence-based adaptive aggregation (Zhu, Zhang, Liu, Wang 2023), and its Byzantine-robust variant.

Clients run plain local SGD and upload g_m = θ_m^{t,U} − θ^t. The server drags each upload toward a reference
direction r^t in proportion to how far it points away from it (DRAG §IV):
  λ_m = c (1 − cos(g_m, r))                                   degree of divergence, eq. 10, in [0, 2c]
  v_m = (1 − λ_m) g_m + λ_m (‖g_m‖/‖r‖) r                     vector manipulation, eq. 11
  Δ^t = (1/S) Σ_m v_m,   θ^{t+1} = θ^t + Δ^t                  eq. 8; Step 3 prints θ^t − Δ^t, a sign typo
                                                              (eqs. 3–5 and the proof add Δ^t: algorithms-seed §4.2)
``drag``: r^0 = (1/S) Σ g_m^0 (the first round's own uploads), r^t = (1 − α) r^{t−1} + α Δ^{t−1} (eq. 6).
``drag_robust`` (§IV-C): r^t = θ_root^{t,U} − θ^t, the server's own U SGD steps on its root data (eqs. 12–13), and
every upload is first rescaled to ‖r‖:  v_m = (1 − λ_m)(‖r‖/‖g_m‖) g_m + λ_m r  (eq. 14). A positive rescaling of an
upload then changes nothing; an exactly reversed one becomes (4c − 1) r.
``adaptive=False`` is an ablation, not in the paper: λ_m ≡ c for every client (the cosine ignored), which leaves
eq. 11's norm-matched pull toward r, a server momentum when α = 1.
A zero g_m or r has no direction: its λ is 0 (v = g, or 0 in eq. 14 for g = 0). Logged per client: ``lambda`` (λ_m)
and ``cosine`` (cos(g_m, r^t)). There is no global learning rate (none in the paper): a ``server_lr`` other than 1 is
refused.
"""
from typing import Annotated

import torch

from ..errors import ConfigError
from .base import Algorithm


def _norms(x: torch.Tensor) -> torch.Tensor:
    return torch.linalg.vector_norm(x, dim=-1)


def cosines(g: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos(g_m, r), whether it is defined) for the uploads g [n, d] and a reference r [d]; 0 where a norm is 0."""
    scale = _norms(g) * _norms(r)
    defined = scale > 0
    cos = torch.where(defined, (g @ r) / torch.where(defined, scale, torch.ones_like(scale)), torch.zeros_like(scale))
    return cos.clamp(-1.0, 1.0), defined


def divergence(g: torch.Tensor, r: torch.Tensor, c: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(λ_m, cos(g_m, r)) for the uploads g [n, d] and the reference r [d] (eq. 10); λ = 0 where a norm is 0."""
    cos, defined = cosines(g, r)
    return torch.where(defined, c * (1.0 - cos), torch.zeros_like(cos)), cos


def dragged(g: torch.Tensor, r: torch.Tensor, lam: torch.Tensor, robust: bool) -> torch.Tensor:
    """v_m of eq. 11 (``robust=False``) or eq. 14 (``robust=True``) for uploads g [n, d] and λ [n]."""
    g_norm, r_norm = _norms(g)[:, None], _norms(r)
    safe = lambda x: torch.where(x > 0, x, torch.ones_like(x))  # noqa: E731
    lam = lam[:, None]
    if robust:  # eq. 14: g scaled to ‖r‖, then dragged toward r itself
        return (1.0 - lam) * (r_norm / safe(g_norm)) * g + lam * r
    return (1.0 - lam) * g + lam * (g_norm / safe(r_norm)) * r  # eq. 11


def _no_server_lr(name, run) -> None:
    if run.server_lr != 1.0:
        raise ConfigError(f"{name} has no server learning rate (θ^{{t+1}} = θ^t + Δ^t), got server_lr={run.server_lr}")


class Drag(Algorithm):
    name = "drag"

    def __init__(self, run, c: Annotated[float, "[0, 1]"] = 0.25, alpha: Annotated[float, "(0, 1]"] = 1.0,
                 adaptive: bool = True):
        super().__init__(run, "uniform")  # eq. 8: (1/S) Σ v_m
        _no_server_lr(self.name, run)
        self.c, self.alpha, self.adaptive = c, alpha, adaptive

    def init(self, w0, layout):
        # r for the next round (eq. 6), and whether one exists yet (round 0 takes the mean of its own uploads)
        return {"r": torch.zeros_like(w0), "started": torch.zeros((), device=w0.device)}

    def aggregate(self, w, state, ups, rnd):
        g = ups["delta"]
        r = torch.where(state["started"] > 0, state["r"], g.mean(0))  # r^t, eq. 6
        lam, cos = divergence(g, r, self.c)
        if not self.adaptive:  # the ablation: every client dragged by c, whatever its angle to r
            lam = torch.full_like(lam, self.c)
        delta = dragged(g, r, lam, robust=False).mean(0)  # eq. 8
        state = {"r": (1.0 - self.alpha) * r + self.alpha * delta, "started": torch.ones_like(state["started"])}
        return w + delta, state, {"lambda": lam, "cosine": cos}


class DragRobust(Algorithm):
    name = "drag_robust"

    def __init__(self, run, c: Annotated[float, "[0, 1]"] = 0.5, root_samples: Annotated[int, "[1, inf)"] = 3000):
        super().__init__(run, "uniform")
        _no_server_lr(self.name, run)
        self.c, self.root_samples = c, root_samples

    def aggregate(self, w, state, ups, rnd):
        r = rnd.root_delta  # eq. 13
        lam, cos = divergence(ups["delta"], r, self.c)
        delta = dragged(ups["delta"], r, lam, robust=True).mean(0)
        return w + delta, state, {"lambda": lam, "cosine": cos}

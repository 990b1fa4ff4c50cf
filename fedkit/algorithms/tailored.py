"""TACO's tailored coefficient (Liu et al., ICDCS 2025, eq. 7) as a wrapper around any method's correction.

``Tailored(base)`` runs ``base`` and scales client i's correction by (1 − α_i^t): the part of its local objective
beyond the data loss and the part of its step direction beyond the gradient,
    objective = f_i + (1 − α_i)(base objective − f_i),    direction = g + (1 − α_i)(base direction − g),
with α_i^t from eq. 7 on the method's own uploads of client i's last round (α_i^0 = ``alpha0``; algorithms-seed
§1.8). FedProx-TACO gets μ(1 − α_i), SCAFFOLD-TACO α(1 − α_i)(c − c_i) (TACO Fig. 6). A base that takes its own
local step (STEM) has no correction to scale and is refused. The base's ``correction_at`` places the scaled
correction (1 − α_i)h under a stateful optimizer.
"""
from __future__ import annotations

from typing import Annotated

import torch
import torch.nn.functional as F

from ..errors import ConfigError
from .base import Algorithm


def eq7_factors(d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 7's two factors for stacked uploads d [n, dim]: the magnitude share 1 − ‖d_i‖ / Σ_j ‖d_j‖ and the
    clipped cosine max(cos(d_i, mean_j d_j), 0). Neither depends on the sign of d.

    A zero upload (or a zero mean) has cosine 0; if every upload is zero the magnitude factor is 1.
    """
    norms = d.norm(dim=1)
    total = norms.sum()
    share = 1 - norms / total if total > 0 else torch.ones_like(norms)
    cosine = F.cosine_similarity(d, d.mean(0, keepdim=True), dim=1, eps=1e-12)
    return share, cosine.clamp_min(0)


def tailored_coefficients(d: torch.Tensor) -> torch.Tensor:
    """Eq. 7: α_i = magnitude share × clipped cosine to the plain mean upload."""
    share, cosine = eq7_factors(d)
    return share * cosine


class Tailored(Algorithm):
    name = "tailored"

    def __init__(self, run, base: str = "fedprox", alpha0: Annotated[float, "[0, 1]"] = 0.1, **base_args):
        from . import make_algorithm

        self.base = make_algorithm(base, run, **base_args)
        if type(self.base).local_step is not Algorithm.local_step:
            raise ConfigError(f"tailored: base {base!r} takes its own local step; there is no correction to scale")
        super().__init__(run, self.base.weighting)
        self.alpha0 = alpha0
        self.buffers = self.base.buffers
        self.needs_features, self.root_samples = self.base.needs_features, self.base.root_samples
        self.correction_at = self.base.correction_at

    @classmethod
    def optimizer_for(cls, hyper):
        """The base's own optimizer (LocalAdam's Adam, ...)."""
        from . import ALGORITHMS

        base = hyper.get("base", "fedprox")
        if not isinstance(base, str) or base not in ALGORITHMS:
            return cls.default_optimizer  # building it names the unknown base
        return ALGORITHMS[base].optimizer_for({k: v for k, v in hyper.items() if k not in ("base", "alpha0")})

    def init(self, w0, layout):
        return {**self.base.init(w0, layout), "tailored_alpha": w0.new_full((self.run.num_clients,), self.alpha0)}

    def message(self, w, state, rnd):
        return {**self.base.message(w, state, rnd), "tailored_alpha": state["tailored_alpha"][rnd.clients]}

    def objective(self, data, w, c, batch):
        return data + (1 - c.recv["tailored_alpha"]) * (self.base.objective(data, w, c, batch) - data)

    def correction_term(self, w, c):
        h = self.base.correction_term(w, c)
        return None if h is None else (1 - c.recv["tailored_alpha"]) * h

    def direction(self, g, w, c):
        return g + (1 - c.recv["tailored_alpha"]) * (self.base.direction(g, w, c) - g)

    def aggregate(self, w, state, ups, rnd):
        w_new, new, metrics = self.base.aggregate(w, state, ups, rnd)
        alpha = tailored_coefficients(-ups["delta"])  # eq. 7 on this round's uploads (TACO's sign, eq. 5)
        new = {**new, "tailored_alpha": state["tailored_alpha"].index_copy(0, rnd.clients, alpha)}
        return w_new, new, {**metrics, "alpha": alpha}


for _hook in ("client_init", "broadcast", "eligible", "outputs", "local_init", "upload", "keep", "bytes_up"):
    setattr(Tailored, _hook, lambda self, *args, _name=_hook: getattr(self.base, _name)(*args))

"""Client-level differential privacy for FedAvg (DP-FedAvg: McMahan, Ramage, Talwar, Zhang, "Learning Differentially
Private Recurrent Language Models", ICLR 2018, Algorithm 1) as a wrapper around a method whose server reads the
uploads only through their average.

``DP(base)`` runs ``base`` on the clients unchanged, and privatises the round's average on the server:

    clip      Δ̃_i = Δ_i · min(1, C / ‖Δ_i‖₂)                (Alg. 1 ClipFn, "flat clipping" over the whole vector)
    average   Δ̄ = (1/m) Σ_{i ∈ S_t} Δ̃_i                    (Alg. 1 f_f with w_k = 1: the fixed denominator qW = m)
    noise     Δ̄ + ξ_t,   ξ_t ~ N(0, σ² I),  σ = z · C / m   (Alg. 1: σ = z S / (qW); S = C the sensitivity bound)

and hands ``base.aggregate`` the uploads Δ̃_i + ξ_t with uniform weights p_i = 1/m, so its average is Δ̄ + ξ_t and
its server step (FedAvg's x_{t+1} = x_t + η_g(Δ̄ + ξ_t), FedAvg-M's or FedAdam's momentum, ...) is post-processing of
the privatised average. One client changes Δ̄ by at most C/m, so each round is a Gaussian mechanism of noise
multiplier z; ``fedkit.privacy.epsilon`` composes the rounds under Poisson sampling with q = m/N.

Choices, stated:
* Uniform weights 1/m over the sampled clients (DP-FedAvg with w_k = 1), never the data sizes: a data-weighted
  average lets one client move it by p_i C with p_i up to 1, so C/m would not bound its influence. A base given
  ``weighting="data"`` is refused; every admitted base runs with ``weighting="uniform"``.
* m is the number of clients sampled in the round (fedkit samples exactly m without replacement). The accountant
  treats the sampling as Poisson with q = m/N, as McMahan et al. do for their fixed-denominator estimator; fedkit's
  fixed-size sample is the usual stand-in for it, not Poisson sampling itself.
* ξ_t is drawn on the CPU from a generator seeded by (run seed, stream 11, round t) and moved to the model's device:
  a run is reproducible, resumes exactly from a checkpoint, and draws the same noise on any device. ``round_noise``
  redraws it.
* z = 0 adds nothing and C = ``None`` (∞) clips nothing: DP(base) is then base with uniform weights, bit for bit.
* Only the model delta is privatised. Bases whose server reads each client's upload (TACO, FLTrust, DRAG, FoolsGold),
  or that upload more than Δ_i (SCAFFOLD's Δc_i, FedNova's a_i, ...), are refused; so are models whose BatchNorm
  statistics are averaged (computed from client data outside the mechanism). Per-client ``update_norm`` and
  ``clipped`` are logged for study: a deployment would not release them.
"""
from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import torch

from ..errors import ConfigError
from .base import Algorithm

NOISE_STREAM = 11  # the random stream of the server's noise (fedkit.federation's streams are 1–6; FAdamGC's 7)
# Bases whose server step reads the uploads only through Σ_i p_i Δ_i (or Σ_i Δ_i) and that upload nothing but Δ_i
ADMITTED = ("fedavg", "fedprox", "fedavg_m", "fedadam", "fedams", "fedacg", "feddyn", "moon", "fedbn", "local_adam")


def round_noise(seed: int, t: int, dim: int) -> torch.Tensor:
    """The standard normal draw g_t [dim] (float32, CPU) of round t of a run with ``seed``: ξ_t = σ g_t."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, NOISE_STREAM, t]))
    return torch.from_numpy(rng.standard_normal(dim, dtype=np.float32))


def clip_updates(delta: torch.Tensor, clip: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(Δ̃ [n, d], ‖Δ_i‖ [n]): each row scaled by min(1, C/‖Δ_i‖) (a zero row, and every row when C = ∞, by 1)."""
    norms = delta.norm(dim=1)
    scale = (clip / norms).clamp(max=1.0)  # ‖Δ_i‖ = 0 gives C/0 = ∞ → 1
    return delta * scale[:, None], norms


class DP(Algorithm):
    name = "dp"

    def __init__(self, run, base: str = "fedavg", clip: Annotated[float, "(0, inf)"] | None = 1.0,
                 noise_multiplier: Annotated[float, "[0, inf)"] = 1.0, **base_args):
        from . import make_algorithm

        if base not in ADMITTED:
            raise ConfigError(f"dp: base {base!r} is not admitted: DP-FedAvg privatises the average of the model "
                              f"deltas, and {base!r}'s server reads each client's upload or uploads more than Δ_i; "
                              f"admitted: {', '.join(ADMITTED)}")
        if base_args.get("weighting", "uniform") != "uniform":
            raise ConfigError("dp: the clipped updates are averaged with uniform weights 1/m (DP-FedAvg's w_k = 1), "
                              f"got weighting={base_args['weighting']!r}")
        self.base = make_algorithm(base, run, **base_args)
        self.base.weighting = "uniform"
        super().__init__(run, "uniform")
        self.clip = math.inf if clip is None else float(clip)
        self.noise_multiplier = float(noise_multiplier)
        if self.noise_multiplier > 0 and math.isinf(self.clip):
            raise ConfigError("dp: noise needs a clip norm (σ = z·C/m); got clip=None (∞) with "
                              f"noise_multiplier={noise_multiplier}")
        if self.base.buffers == "average" and run.layout is not None and run.layout.batchnorm:
            raise ConfigError("dp: the model's BatchNorm statistics would be averaged from client data outside the "
                              "clip and the noise; use a model without BatchNorm (or base 'fedbn', which keeps them)")
        self.buffers, self.needs_features = self.base.buffers, self.base.needs_features
        self.root_samples, self.epoch_start = self.base.root_samples, self.base.epoch_start
        self.correction_at = self.base.correction_at

    @classmethod
    def optimizer_for(cls, hyper):
        """The base's own optimizer (LocalAdam's Adam, ...)."""
        from . import ALGORITHMS

        base = hyper.get("base", "fedavg")
        if not isinstance(base, str) or base not in ALGORITHMS:
            return cls.default_optimizer  # building it names the unknown base
        own = ("base", "clip", "noise_multiplier")
        return ALGORITHMS[base].optimizer_for({k: v for k, v in hyper.items() if k not in own})

    def noise_std(self, m: int) -> float:
        """σ = z·C/m, the standard deviation of each coordinate of the noise added to the average of m updates."""
        return 0.0 if self.noise_multiplier == 0 else self.noise_multiplier * self.clip / m

    def aggregate(self, w, state, ups, rnd):
        clipped, norms = clip_updates(ups["delta"], self.clip)  # Alg. 1 ClipFn
        sigma = self.noise_std(len(clipped))  # Alg. 1: σ = z S / (qW), qW = m
        if sigma > 0:  # Σ_i (1/m)(Δ̃_i + ξ_t) = Δ̄ + ξ_t: the noise enters the average once
            clipped = clipped + sigma * round_noise(self.run.seed, rnd.t, clipped.shape[1]).to(clipped)
        w_new, new, metrics = self.base.aggregate(w, state, {**ups, "delta": clipped}, rnd)
        return w_new, new, {**metrics, "update_norm": norms, "clipped": (norms > self.clip).float()}


for _hook in ("init", "client_init", "broadcast", "message", "eligible", "client_models", "outputs", "objective",
              "correction_term", "direction", "local_init", "local_step", "upload", "keep", "local_final", "bytes_up"):
    setattr(DP, _hook, lambda self, *args, _name=_hook: getattr(self.base, _name)(*args))

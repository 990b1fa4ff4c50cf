"""Measured local steps: a config's first rounds trained and timed on this machine, outside the runner (no evaluation,
no cache, no run record). The paper-scale plan predicts device minutes from them, and ``calibrate_step_seconds``
sets the simulated clock's ``step_seconds`` from them."""
from __future__ import annotations

import itertools
import statistics

from .config import Config
from .errors import ConfigError
from .federation import Federation


def round_seconds(cfg: Config, rounds: int, fed: Federation | None = None) -> list[tuple[float, int]]:
    """(seconds, local steps) of the clients' training in each of ``cfg``'s first ``rounds`` rounds, on its device and
    engine (vectorized: the stacked step's time; sequential: the clients' times summed); ``fed``: its Federation, if
    already built."""
    fed = fed or Federation(cfg)
    return [(sum(rnd.result.seconds), sum(plan.steps for plan in rnd.plans))
            for rnd in itertools.islice(fed.rounds(), rounds)]


def calibrate_step_seconds(cfgs: dict[str, Config], rounds: int = 3, steps: int | None = None) -> dict[str, float]:
    """Seconds per local step of each config (by label), each client timed alone on the sequential engine: the median
    over ``rounds`` rounds after a first warm-up round, of the round's client seconds over its local steps (Table I's
    measure). ``steps``: local steps per round in the probe (default: the config's own). A config run with
    ``step_seconds`` set to its value (``cfg.replace(step_seconds=...)``) keeps that compute on the simulated clock
    whatever engine trains it, e.g. the vectorized one with its seeds stacked."""
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ConfigError(f"rounds must be an integer ≥ 1, got {rounds!r}")
    out = {}
    for label, cfg in cfgs.items():
        short = {"local_steps": steps, "local_epochs": None} if steps is not None else {}
        probe = cfg.replace(engine="sequential", compile=False, rounds=rounds + 1, stop_accuracy=None, **short)
        timed = round_seconds(probe, rounds + 1)[1:]
        out[label] = statistics.median(seconds / max(count, 1) for seconds, count in timed)
    return out

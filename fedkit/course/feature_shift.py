"""Lesson 09 (feature shift and FedBN): every client's own-domain test accuracy, with the BatchNorm statistics it
keeps or recomputed on its own images, and the checkers of the lesson's two exercises (``check_exercise`` and
``check_exercise_2``, each with the notebook's Config on the ``feature_shift`` data set, ``fedkit/data/shift.py``).

Exercise 1 (read off the lesson): on which domain does FedBN gain the most over FedAvg?
Solution: domain 1, the faded scanner (a = 0.4, b = 0.3): FedAvg normalises it at test time with statistics averaged
over all four domains, far from its own, and serves it worst; FedBN's own statistics remove the shift exactly (eq. 5),
so it gains most there (about +0.4 at the default scale; the dim scanner gains less, and the noisy, rotated one
hardly anything: BatchNorm cannot undo a rotation or noise).

Exercise 2 (reasoning, then a run): domain 1's scanner maps a pixel x to a·x + (1 − a)/2. Find a contrast
a ∈ [−1, 1], |a| ≥ 0.2, at which FedBN serves that domain at least 25 points worse than the clean domain 0.
Solution: any negative contrast, e.g. a = −1 (an inverted scanner, white background). With a < 0 the first layer's
pre-activations flip sign, u' = a·u + δ, and normalising with the client's own μ' = a·μ + δ, σ' = |a|·σ gives
sign(a)·(u − μ)/σ (eq. 5): local statistics undo the scale and the offset, never the sign, and the shared layers
above, trained on the other three domains, read the flipped features wrongly (FedBN ends near chance on it: 0.1–0.2
against 0.9 on the clean domain). Every positive a, however small, is absorbed (a = 0.2: within 0.06 of the clean
domain after 40 rounds).
"""
from __future__ import annotations

import functools

import pandas as pd
import torch
from torch import nn

from .. import runner
from ..config import Config
from ..data import load_dataset
from ..data.shift import SCANNERS, domain_rows, domain_transform, user_domain
from ..engine import evaluate
from ..federation import Federation, FedState
from ..runner import run
from . import check, is_number, is_whole, need_config, require, shown

REFERENCE_DOMAIN = 1  # exercise 1: the faded scanner
REFERENCE_CONTRAST = -1.0  # exercise 2: an inverted scanner
GAP = 0.25  # exercise 2: FedBN's accuracy on domain 1 at least this far below the clean domain 0
MIN_ROUNDS = 10  # exercise 2 trains FedBN at least this long (after 5 rounds a faint scanner is not yet absorbed)
MIN_CONTRAST = 0.2  # exercise 2: |a| at least this (a ≈ 0 erases the digits: no method could serve that domain)
TASKS = {1: "on which domain does FedBN gain the most test accuracy over FedAvg (its clients' mean)?",
         2: "domain 1's scanner maps a pixel x to a·x + (1 − a)/2. Find a contrast a in [−1, 1], |a| ≥ 0.2, at which "
            "FedBN (the settings above, at least 10 rounds) serves domain 1 at least 25 points worse than the clean "
            "domain 0."}
HINTS = {1: "compare the FedAvg and FedBN bars of each domain's clients.",
         2: "eq. (5): which part of a·u + δ can a normalisation with the client's own μ and σ not undo?"}
FORMS = {1: "your domain (a whole number)", 2: "your contrast a (a number in [−1, 1], |a| ≥ 0.2)"}


def domains(cfg: Config) -> list[dict]:
    """The domains of ``cfg``'s feature-shift data set."""
    return list(cfg.dataset_args.get("domains", SCANNERS))


@functools.lru_cache(maxsize=16)
def final_state(cfg: Config) -> tuple[Federation, FedState]:
    """``cfg``'s federation and its state after the last round (client-kept BatchNorm layers included): ``run``
    trains it or reads it from the run cache, whose entry keeps that state (``final.pt``); without one (no cache, a
    run read from an archive) the rounds are trained again here."""
    history = run(cfg, progress=False)
    fed = Federation(cfg)
    try:
        state = FedState(**runner._read_checkpoint(runner.default_cache() / cfg.key() / runner.FINAL)["state"])
    except Exception:  # noqa: BLE001 - absent or unreadable: train again
        state = None
    if state is None or history.weights is None or not torch.equal(state.w.cpu(), history.weights.cpu()):
        for rnd in fed.rounds():
            state = rnd.after
    return fed, state


def own_statistics(fed: Federation, w: torch.Tensor, rows) -> dict:
    """BatchNorm statistics of the model at w measured on the training samples ``rows`` (one pass, in training mode:
    each layer's mean and variance over them), the model's other buffers unchanged."""
    norms = [m for m in fed.fm.module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    buffers = {k: v.clone() for k, v in fed.fm.buffers.items()}
    momenta = [m.momentum for m in norms]
    try:
        for m in norms:
            m.momentum = 1.0  # the running estimates become this pass's statistics
        fed.fm.module.train()
        with torch.no_grad():
            fed.fm(w, fed.x_train[torch.as_tensor(rows, device=w.device)], buffers)
    finally:
        for m, momentum in zip(norms, momenta):
            m.momentum = momentum
        fed.fm.module.eval()
    return buffers


def domain_accuracy(cfg: Config, statistics: str = "kept") -> pd.DataFrame:
    """One row per client of ``cfg``'s run: its domain and the test accuracy on that domain's test images of the model
    it would use — FedBN's: its own BatchNorm layers; FedAvg's: the global model — with the BatchNorm statistics it
    keeps (``statistics="kept"``: FedAvg's averaged ones) or measured on its own training images ("own")."""
    fed, s = final_state(cfg)
    users = load_dataset(cfg.dataset, **cfg.dataset_args).users
    count = len(domains(cfg))
    models = fed.algorithm.client_models(s.w, s.kept)
    rows = []
    for i, part in enumerate(fed.parts):
        w = s.w if models is None else models[i]
        buffers = ({k: v[i] for k, v in s.buffers.items()} if fed.algorithm.buffers == "local" else s.buffers)
        if statistics == "own":
            buffers = own_statistics(fed, w, part)
        domain = user_domain(int(users[part[0]]), count)
        test = domain_rows(fed, domain, count)
        acc, _ = evaluate(fed.fm, w, fed.x_test[test], fed.y_test[test], fed.task, buffers)
        rows.append({"client": i, "domain": domain, "accuracy": acc})
    return pd.DataFrame(rows)


def by_domain(cfg: Config, statistics: str = "kept") -> pd.Series:
    """Mean own-domain test accuracy of ``cfg``'s clients, per domain."""
    return domain_accuracy(cfg, statistics).groupby("domain")["accuracy"].mean()


def scanner(contrast: float) -> dict:
    """Exercise 2's domain 1: contrast a around mid grey, x → a·x + (1 − a)/2 (images stay in [0, 1])."""
    return {"contrast": float(contrast), "brightness": (1 - float(contrast)) / 2}


def need_base(base: Config) -> list[dict]:
    """``base``'s domains, or ValueError unless it is FedAvg or FedBN on a feature_shift data set whose domain 0 is the
    clean images."""
    need_config("base", base)
    if base.dataset != "feature_shift" or base.algorithm not in ("fedavg", "fedbn"):
        raise ValueError(f"base must be FedAvg or FedBN on the feature_shift data set, got algorithm "
                         f"{base.algorithm!r} on {base.dataset!r}")
    found = domains(base)
    if len(found) < 2 or domain_transform(found[0]) != domain_transform({}):
        raise ValueError(f"base's domains must start with the clean one ({{}}) and have at least two, got {found!r}")
    return found


def check_exercise(domain, base: Config) -> None:
    """Exercise 1 (see :func:`fedkit.course.check`): the domain on which FedBN gains the most own-domain test accuracy
    over FedAvg (their clients' mean) in ``base``'s runs (the notebook's; the other algorithm derived from it)."""
    count = len(need_base(base))

    def judge(d) -> str:
        require(is_whole(d) and 0 <= d < count, f"the domain must be a whole number in [0, {count - 1}], got "
                                                f"{shown(d)}")
        gain = by_domain(base.replace(algorithm="fedbn")) - by_domain(base.replace(algorithm="fedavg"))
        best = int(gain.idxmax())
        require(int(d) == best, f"on domain {d} FedBN gains {gain[d]:+.2f} over FedAvg; another domain gains more. "
                                "Where are FedAvg's bars lowest, and which scanner did FedBN's own statistics undo?")
        others = gain.drop(best).round(2).tolist()
        return f"FedBN gains the most on domain {best} ({gain[best]:+.2f}; the other domains {others})"

    check(domain, REFERENCE_DOMAIN, judge, TASKS[1], HINTS[1], FORMS[1])


def check_exercise_2(contrast: float | None, base: Config) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): a contrast a for domain 1's scanner (x → a·x + (1 − a)/2) at
    which FedBN on ``base`` (at least 10 rounds) serves domain 1 at least 25 points worse than the clean domain 0."""
    found = need_base(base)

    def judge(a) -> str:
        require(is_number(a) and -1 <= a <= 1 and abs(a) >= MIN_CONTRAST,
                f"the contrast a must be a number in [−1, 1] with |a| ≥ {MIN_CONTRAST}, got {shown(a)}")
        a = float(a)
        shifted = [found[0], scanner(a), *found[2:]]
        acc = by_domain(base.replace(algorithm="fedbn", dataset_args={**base.dataset_args, "domains": shifted},
                                     rounds=max(base.rounds, MIN_ROUNDS)))
        require(acc[0] - acc[1] >= GAP, f"with a = {a:g} FedBN serves domain 1 at {acc[1]:.2f} and the clean domain "
                                        f"at {acc[0]:.2f}: its own BatchNorm statistics absorbed this scanner. Look at "
                                        "eq. (5): which a can (u − μ)/σ with the client's own μ and σ not undo?")
        return f"with a = {a:g} FedBN serves domain 1 at {acc[1]:.2f}, the clean domain at {acc[0]:.2f}"

    check(contrast, REFERENCE_CONTRAST, judge, TASKS[2], HINTS[2], FORMS[2])

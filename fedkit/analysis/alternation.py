"""TACO's freeloader rule on benign federations, seen through its coefficients: do the label camps of a
Dirichlet split take turns at α_i^t ≥ κ?

eq. 7 writes α_i = s_i · max(cos(Δ_i, mean_j Δ_j), 0) with the size factor s_i = 1 − ‖Δ_i‖ / Σ_j ‖Δ_j‖; eq. 10
counts α_i ≥ κ against client i and expels it after λ counts. A client's *camp* is the majority label of its
data. Everything here works on a run's ``History.clients`` (one row per round and client, with TACO's ``alpha``
and ``expelled``); eq. 7's factors come from ``algorithms.tailored.eq7_factors``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..algorithms.tailored import eq7_factors


def majority_labels(parts, labels) -> np.ndarray:
    """The most frequent label of each client's samples (ties: the smallest label); -1 for a client without
    data. ``parts`` holds each client's sample indices into ``labels``."""
    labels = np.asarray(labels)
    out = np.full(len(parts), -1, dtype=np.int64)
    for i, part in enumerate(parts):
        if len(part):
            values, counts = np.unique(labels[np.asarray(part)], return_counts=True)
            out[i] = values[np.argmax(counts)]
    return out


def alpha_matrix(clients: pd.DataFrame, column: str = "alpha") -> pd.DataFrame:
    """``column`` as a round × client table (NaN where a client did not take part)."""
    return clients.pivot(index="round", columns="client", values=column).sort_index()


def expulsion_rounds(clients: pd.DataFrame) -> pd.Series:
    """The round in which each expelled client was expelled (the first row with ``expelled`` set), by client;
    clients never expelled are left out."""
    hit = clients[clients["expelled"] > 0]
    return hit.groupby("client")["round"].min().astype(int).rename("expelled in round")


def main_camps(camps: np.ndarray) -> tuple[int, int]:
    """The two most common camps (majority labels), the larger first; ties by label."""
    values, counts = np.unique(np.asarray(camps)[np.asarray(camps) >= 0], return_counts=True)
    order = np.lexsort((values, -counts))
    if len(order) < 2:
        raise ValueError(f"need two camps, got {values.tolist()}")
    return int(values[order[0]]), int(values[order[1]])


def camp_gap(alpha: pd.DataFrame, camps: np.ndarray, a: int, b: int) -> pd.Series:
    """Per round: mean α over the clients of camp ``a`` minus that over camp ``b`` (those that took part that
    round); NaN where either camp had nobody. ``alpha`` is round × client (``alpha_matrix``), ``camps`` is
    indexed by client id."""
    camp = pd.Series(np.asarray(camps)[alpha.columns.to_numpy()], index=alpha.columns)
    mean_a = alpha.loc[:, camp == a].mean(axis=1)
    mean_b = alpha.loc[:, camp == b].mean(axis=1)
    return (mean_a - mean_b).rename(f"camp {a} − camp {b}")


def sign_flip_fraction(values) -> float:
    """The fraction of consecutive pairs (both present and non-zero) whose signs differ; NaN without pairs."""
    v = np.asarray(values, dtype=float)
    x, y = v[:-1], v[1:]
    usable = np.isfinite(x) & np.isfinite(y) & (x != 0) & (y != 0)
    return float(np.mean(np.sign(x[usable]) != np.sign(y[usable]))) if usable.any() else float("nan")


def crossing_flip_fraction(alpha: pd.DataFrame, kappa: float) -> pd.Series:
    """Per client: over its consecutive pairs of present rounds (round r and r + 1), the fraction where
    whether α ≥ κ changes; 1 = crosses κ exactly every other round, 0 = never changes."""
    above, after = alpha >= kappa, alpha.shift(-1) >= kappa
    both = alpha.notna() & alpha.shift(-1).notna()
    return (above != after).astype(float).where(both).mean().rename("crossing flip fraction")


def eq7_trace(cfg, rounds: int) -> pd.DataFrame:
    """Re-run the first ``rounds`` rounds of ``cfg`` through ``Federation(cfg).rounds()`` and split each client's
    α into eq. 7's factors: one row per (round, client) with ``size``, ``cosine``, their product and the
    ``alpha`` TACO recorded."""
    from ..federation import Federation

    rows = []
    for t, rnd in enumerate(Federation(cfg).rounds(), start=1):
        size, cosine = eq7_factors(rnd.uploads["delta"])
        alpha = rnd.metrics.get("alpha", torch.full_like(size, float("nan")))
        for j, client in enumerate(rnd.clients):
            rows.append({"round": rnd.info.t, "client": int(client), "size": float(size[j]),
                         "cosine": float(cosine[j]), "product": float(size[j] * cosine[j]),
                         "alpha": float(alpha[j])})
        if t >= rounds:
            break
    return pd.DataFrame(rows)


def alternation_summary(clients: pd.DataFrame, camps: np.ndarray, kappa: float) -> dict:
    """One run's alternation statistics: the sign-flip fraction and mean |gap| of the gap between its two main
    camps (NaN with a single camp, as on an IID split), the mean of the clients' crossing flip fractions, and the
    share of (round, client) rows with α ≥ κ."""
    alpha = alpha_matrix(clients)
    try:
        gap = camp_gap(alpha, camps, *main_camps(camps))
        rounds, flips, size = int(gap.notna().sum()), sign_flip_fraction(gap), float(gap.abs().mean())
    except ValueError:  # a single camp
        rounds, flips, size = len(alpha), float("nan"), float("nan")
    return {"rounds": rounds, "gap sign flips": flips, "mean |gap|": size,
            "client crossing flips": float(crossing_flip_fraction(alpha, kappa).mean()),
            "share α ≥ κ": float((clients["alpha"] >= kappa).mean())}

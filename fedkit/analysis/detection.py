"""Freeloader detection seen from the clients' side: who is who in a config, whom a run expelled, their α."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from ..config import Config
from ..data.partition import label_group_of
from ..history import History


def client_groups(cfg: Config, fractions=(0.1, 0.2, 0.5)) -> np.ndarray:
    """Group A/B/C (0/1/2) of every client of a label-group partition, as the partitioner drew them."""
    from ..federation import partition_seed

    return label_group_of(cfg.num_clients, partition_seed(cfg), fractions)


def freeloader_mask(cfg: Config) -> np.ndarray:
    """Which clients the config's freeloader threat picks (same stream as the run)."""
    from ..federation import chosen_threat

    return chosen_threat(cfg).bad


def expelled(history: History) -> pd.Series:
    """Whether each client that took part was expelled by the end of training, indexed by client."""
    return history.clients.groupby("client")["expelled"].max() > 0


def detection_rates(history: History, freeloaders: np.ndarray) -> tuple[float, float]:
    """(TPR, FPR) at the end of training: expelled freeloaders / freeloaders, expelled benign / benign."""
    out = expelled(history).reindex(range(len(freeloaders)), fill_value=False).to_numpy()
    return float(out[freeloaders].mean()), float(out[~freeloaders].mean())


def alpha_by_group(history: History, groups: np.ndarray, freeloaders: np.ndarray) -> pd.Series:
    """Mean α_i^t over rounds and members of groups A, B, C (benign) and of the freeloaders (Table II)."""
    rows = history.clients
    kind = np.where(freeloaders, "Freeloaders", np.array(["A", "B", "C"])[groups])
    return rows.assign(group=kind[rows["client"]]).groupby("group")["alpha"].mean().reindex(
        ["A", "B", "C", "Freeloaders"])


def expulsions(histories: dict[str, History], detection_off: Callable[[str], History],
               label: Callable[[str], str] = str) -> pd.DataFrame:
    """TACO's expulsions on federations without freeloaders, where each one is a false positive: per data set, how
    many of the clients were expelled, TACO's final accuracy %, and, where anyone was, that of ``detection_off(data
    set)``, the same run with detection off."""
    rows = []
    for name, h in histories.items():
        count = int(expelled(h).sum())
        rows.append({"dataset": name, "data used": label(name), "benign clients expelled": count,
                     "of": int(h.clients["client"].nunique()), "TACO": 100 * h.final_accuracy,
                     "TACO, detection off": 100 * detection_off(name).final_accuracy if count else np.nan})
    return pd.DataFrame(rows)

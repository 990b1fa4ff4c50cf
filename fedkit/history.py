"""A run's record: one row per round and one per (round, client), as pandas frames; save and load."""
from __future__ import annotations

import json
import math
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch


@dataclass
class History:
    config: dict
    rounds: pd.DataFrame  # round 0 = the initial model; then one row per trained round
    clients: pd.DataFrame  # one row per client and round it took part in
    diverged: bool = False
    ended_early: str | None = None  # why training stopped before the last round (e.g. every client expelled)
    weights: torch.Tensor | None = field(default=None, repr=False)  # final global model (flat), not saved

    @property
    def final_accuracy(self) -> float:
        return float(self.rounds["test_accuracy"].iloc[-1]) if not self.diverged else math.nan

    def rounds_to(self, target: float) -> int | None:
        """First round whose test accuracy reaches ``target`` (None if never)."""
        hit = self.rounds.loc[self.rounds["test_accuracy"] >= target, "round"]
        return int(hit.iloc[0]) if len(hit) else None

    def time_to(self, target: float, per_round: str = "client_seconds_max") -> float | None:
        """Cumulative time until ``target`` is reached, a round costing its slowest client by default."""
        r = self.rounds_to(target)
        if r is None:
            return None
        return float(self.rounds.loc[self.rounds["round"] <= r, per_round].fillna(0).sum())

    def save(self, directory: str | Path, fmt: str = "csv") -> Path:
        """Write rounds.<fmt>, clients.<fmt> (fmt 'csv' or 'parquet') and meta.json into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name in ("rounds", "clients"):
            frame = getattr(self, name)
            with replacing(directory / f"{name}.{fmt}") as path:
                frame.to_parquet(path, index=False) if fmt == "parquet" else frame.to_csv(path, index=False)
        with replacing(directory / "meta.json") as path:  # last: a reader that sees it sees complete files
            path.write_text(json.dumps({"config": self.config, "diverged": self.diverged,
                                        "ended_early": self.ended_early, "format": fmt}, indent=1, default=str))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> History:
        directory = Path(directory)
        meta = json.loads((directory / "meta.json").read_text())
        fmt = meta["format"]
        read = pd.read_parquet if fmt == "parquet" else pd.read_csv
        return cls(meta["config"], read(directory / f"rounds.{fmt}"), read(directory / f"clients.{fmt}"),
                   meta["diverged"], meta.get("ended_early"))


@contextmanager
def replacing(path: Path):
    """Write to a temporary name, then atomically replace ``path``: concurrent readers never see half a file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)  # a failed write leaves no stray file

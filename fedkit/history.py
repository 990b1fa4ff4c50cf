"""A run's record: one row per round and one per (round, client), as pandas frames; save and load."""
from __future__ import annotations

import hashlib
import json
import math
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from .errors import FedkitError


@dataclass
class History:
    config: dict
    rounds: pd.DataFrame  # round 0 = the initial model; then one row per trained round
    clients: pd.DataFrame  # one row per client and round it took part in
    diverged: bool = False
    ended_early: str | None = None  # why training stopped before the last round (e.g. every client expelled)
    weights: torch.Tensor | None = field(default=None, repr=False)  # final global model (flat)
    models: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)  # round -> global model (snapshots)
    provenance: dict = field(default_factory=dict)  # the training machine and seconds (``fedkit.provenance``)
    parameters: int | None = None  # the flat model's length, the floats one model transfer carries (from weights)

    def __post_init__(self):
        if self.parameters is None and self.weights is not None:
            self.parameters = self.weights.numel()

    @property
    def model_at_hand(self) -> bool:
        """Whether reading ``weights`` and ``models`` trains nothing (False for an archived run not trained here)."""
        return True

    def same_arithmetic(self, other: History) -> bool:
        """Whether two runs did their float operations alike, so that equal maths gives equal bits: each trained in
        one process (not resumed) on the same engine, device, CPU or GPU model, CPU vector instructions, torch, thread
        count and seed-stack height. Otherwise they agree only to float order, a difference that compounds over the
        rounds."""
        def arithmetic(h: History):
            p = h.provenance
            if not p or p.get("resumed_after_round") or len(p.get("segments", [p])) != 1:
                return None  # unknown (trained before provenance) or trained in several processes
            engines = tuple(h.rounds["engine"].dropna().unique()) if "engine" in h.rounds else ()
            return (engines, len(p.get("stacked_with", [])),
                    *(p.get(k) for k in ("device", "gpu", "cpu", "cpu_capability", "torch", "threads")))

        mine = arithmetic(self)
        return mine is not None and mine == arithmetic(other)

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
        """Write rounds.<fmt>, clients.<fmt> (fmt 'csv' or 'parquet'), models.pt (the final model and the
        snapshots, on the CPU) and meta.json (with their sha256) into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        digests = {}
        for name in ("rounds", "clients"):
            frame = getattr(self, name)
            with replacing(directory / f"{name}.{fmt}") as path:
                frame.to_parquet(path, index=False) if fmt == "parquet" else frame.to_csv(path, index=False)
                digests[f"{name}.{fmt}"] = _sha256(path)
        with replacing(directory / MODELS) as path:
            final = None if self.weights is None else self.weights.detach().cpu()
            torch.save({"final": final, "rounds": {t: w.detach().cpu() for t, w in self.models.items()}}, path)
            digests[MODELS] = _sha256(path)
        with replacing(directory / "meta.json") as path:  # last: a reader that sees it sees complete files
            path.write_text(json.dumps({"config": self.config, "diverged": self.diverged,
                                        "ended_early": self.ended_early, "provenance": self.provenance, "format": fmt,
                                        "sha256": digests},
                                       indent=1, default=str))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> History:
        """Read a saved History; a missing, corrupt or altered file raises FedkitError naming it."""
        directory = Path(directory)
        path = directory / "meta.json"
        try:
            meta = json.loads(path.read_text())
            fmt = meta["format"]
            read = pd.read_parquet if fmt == "parquet" else pd.read_csv
            digests = meta.get("sha256", {})
            for name in (f"rounds.{fmt}", f"clients.{fmt}", MODELS):
                path = directory / name
                if name in digests and digests[name] != _sha256(path):
                    raise ValueError("its sha256 differs from the one saved in meta.json")
            rounds, clients = (read(directory / f"{name}.{fmt}") for name in ("rounds", "clients"))
            models = torch.load(directory / MODELS) if MODELS in digests else {"final": None, "rounds": {}}
            return cls(meta["config"], rounds, clients, meta["diverged"], meta.get("ended_early"), models["final"],
                       models["rounds"], meta.get("provenance", {}))
        except Exception as err:
            raise FedkitError(f"saved history file {path} is unreadable ({type(err).__name__}: {err})") from err


MODELS = "models.pt"


def worker_seconds(segment: dict) -> float:
    """A training segment's share of one worker's wall seconds: a stack of n seeds trains them in one process, and
    each of its runs records the whole stack's seconds, so each counts 1/n of them."""
    return segment["train_seconds"] / (1 + len(segment.get("stacked_with") or ()))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def replacing(path: Path):
    """Write to a temporary name, then atomically replace ``path``: concurrent readers never see half a file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)  # a failed write leaves no stray file

"""The experiment configuration: one validated, hashable value that names a run and its cached result."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError

ENGINES = ("sequential", "vectorized")


@dataclass(frozen=True)
class Config:
    """Everything that determines a federated run. Invalid values raise ConfigError naming the field.

    Learning rates follow the "delta units" convention: a client takes steps w ← w − lr·d, and the server
    applies x_{t+1} = x_t + server_lr · Σ_i p_i (y_i − x_t), so server_lr = 1 is plain averaging.
    """

    dataset: str = "digits"
    dataset_args: dict = field(default_factory=dict)
    partition: str = "dirichlet"
    partition_args: dict = field(default_factory=lambda: {"phi": 0.1})
    num_clients: int = 20
    participation: float = 1.0  # fraction of clients sampled each round, in (0, 1]
    clients_per_round: int | None = None  # a count instead of a fraction (overrides participation)
    model: str = "cnn"
    model_args: dict = field(default_factory=dict)
    algorithm: str = "fedavg"
    algorithm_args: dict = field(default_factory=dict)
    rounds: int = 20
    local_steps: int | None = 10  # K; exactly one of local_steps / local_epochs is set
    local_epochs: int | None = None  # E: client i then takes E·⌈n_i / batch_size⌉ steps
    batch_size: int = 64
    lr: float = 0.01  # η_l
    server_lr: float = 1.0  # η_g
    threat: str | None = None  # e.g. "freeloaders"; None = every client honest
    threat_args: dict = field(default_factory=dict)
    optimizer: str | None = None  # client optimizer; None = the algorithm's own choice
    optimizer_args: dict = field(default_factory=dict)
    seed: int = 0
    device: str = "cpu"
    engine: str = "vectorized"
    eval_every: int = 1  # test every n-th round, and always the last
    stop_accuracy: float | None = None  # stop once test accuracy reaches this (rounds-to-target runs)

    def __post_init__(self):
        _validate(self)

    def key(self) -> str:
        """A stable hash of every field (and the fedkit version): the name of this run's cached result."""
        from . import __version__

        text = json.dumps({"fedkit": __version__, **self.to_dict()}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return int(self.key(), 16)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes) -> Config:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Config:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown config field(s) {unknown}; known fields: {sorted(known)}")
        return cls(**values)

    def sampled_per_round(self) -> int:
        if self.clients_per_round is not None:
            return self.clients_per_round
        return max(1, round(self.participation * self.num_clients))


def _validate(c: Config) -> None:
    from .algorithms import ALGORITHMS, make_algorithm
    from .data import DATASETS, PARTITIONS
    from .models import MODELS
    from .optim import OPTIMIZERS, make_optimizer
    from .threats import make_threat

    def need(ok: bool, name: str, rule: str):
        if not ok:
            raise ConfigError(f"{name} {rule}, got {getattr(c, name)!r}")

    def known(name: str, registry):
        value = getattr(c, name)
        if value not in registry:
            raise ConfigError(f"unknown {name} {value!r}; known: {', '.join(sorted(registry))}")

    known("dataset", DATASETS)
    known("partition", PARTITIONS)
    known("model", MODELS)
    known("algorithm", ALGORITHMS)
    if c.optimizer is not None:
        known("optimizer", OPTIMIZERS)
    for name in ("dataset_args", "partition_args", "model_args", "algorithm_args", "optimizer_args", "threat_args"):
        need(isinstance(getattr(c, name), dict), name, "must be a mapping of option names to values")
    for name in ("num_clients", "rounds", "batch_size", "eval_every"):
        need(_is_int(getattr(c, name)) and getattr(c, name) >= 1, name, "must be an integer ≥ 1")
    need(_is_int(c.seed) and c.seed >= 0, "seed", "must be an integer ≥ 0")
    need(_is_real(c.participation) and 0 < c.participation <= 1, "participation", "must lie in (0, 1]")
    if c.clients_per_round is not None:
        need(_is_int(c.clients_per_round) and 1 <= c.clients_per_round <= c.num_clients,
             "clients_per_round", f"must be an integer in [1, num_clients={c.num_clients}]")
    if (c.local_steps is None) == (c.local_epochs is None):
        raise ConfigError(f"set exactly one of local_steps and local_epochs, got local_steps={c.local_steps!r} "
                          f"and local_epochs={c.local_epochs!r}")
    if c.local_steps is not None:
        need(_is_int(c.local_steps) and c.local_steps >= 1, "local_steps", "must be an integer ≥ 1")
    else:
        need(_is_int(c.local_epochs) and c.local_epochs >= 1, "local_epochs", "must be an integer ≥ 1")
    need(_is_real(c.lr) and c.lr > 0, "lr", "must be a finite number > 0")
    need(_is_real(c.server_lr) and c.server_lr > 0, "server_lr", "must be a finite number > 0")
    if c.stop_accuracy is not None:
        need(_is_real(c.stop_accuracy) and 0 < c.stop_accuracy <= 1, "stop_accuracy", "must lie in (0, 1]")
    need(c.engine in ENGINES, "engine", f"must be one of {ENGINES}")
    need(isinstance(c.device, str) and c.device.split(":")[0] in ("cpu", "cuda", "mps"), "device",
         "must be 'cpu', 'cuda', 'cuda:N' or 'mps'")
    # Instantiating the algorithm, optimizer and threat checks their hyper-parameters (names and values).
    algorithm = make_algorithm(c.algorithm, **c.algorithm_args)
    make_optimizer(c.optimizer or algorithm.optimizer, **c.optimizer_args)
    make_threat(c.threat, **c.threat_args)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

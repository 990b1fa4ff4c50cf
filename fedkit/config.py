"""The experiment configuration: one validated, hashable value that names a run and its cached result."""
from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import inspect
import json
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError

ENGINES = ("sequential", "vectorized")
ALIASES = {"learning_rate": "lr", "local_lr": "lr", "client_lr": "lr", "global_lr": "server_lr",
           "epochs": "local_epochs", "clients": "num_clients", "steps": "local_steps", "batch": "batch_size",
           "optimiser": "optimizer"}


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
    lr: float = 0.01  # η_l, the client optimizer's learning rate in round 1
    lr_schedule: str = "constant"  # η_l over rounds: "constant", "step" or "cosine"
    lr_schedule_args: dict = field(default_factory=dict)  # e.g. {every: 10, gamma: 0.5} for "step"
    server_lr: float = 1.0  # η_g
    threat: str | None = None  # e.g. "freeloaders"; None = every client honest
    threat_args: dict = field(default_factory=dict)
    optimizer: str | None = None  # client optimizer; None = the algorithm's own choice
    optimizer_args: dict = field(default_factory=dict)
    seed: int = 0
    device: str = "cpu"
    engine: str = "auto"  # "sequential", "vectorized", or "auto": the faster for the model and device
    compile: bool = False  # torch.compile the vectorized engine's step gradient (rounds' compile_seconds)
    eval_every: int = 1  # test every n-th round, and always the last
    snapshots: int = 0  # also keep the global model after every n-th round and the last (History.models); 0: none
    stop_accuracy: float | None = None  # stop once test accuracy reaches this (rounds-to-target runs)
    link_mbps: float = 100.0  # simulated clock: client–server link speed in Mbit/s (2^20 bit/s)
    step_seconds: float | None = None  # simulated clock: seconds per local step (None = the measured compute time)

    def __post_init__(self):
        _validate(self)

    def key(self) -> str:
        """A stable hash of every field (and the fedkit version): the name of this run's cached result."""
        from . import __version__

        fields = self.to_dict()
        if not fields["compile"]:
            del fields["compile"]  # so that runs cached before the switch existed keep their keys
        text = json.dumps({"fedkit": __version__, **fields}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return int(self.key(), 16)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes) -> Config:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Config:
        return cls(**values)

    def sampled_per_round(self) -> int:
        if self.clients_per_round is not None:
            return self.clients_per_round
        return max(1, round(self.participation * self.num_clients))

    def settings(self, layout=None):
        """The run's settings an algorithm is built with, including the client optimizer (η_l and its schedule)
        and, from a Federation, the model's ``layout``."""
        from .algorithms import ALGORITHMS, Settings
        from .optim import make_optimizer, make_schedule

        schedule = make_schedule(self.lr_schedule, self.rounds, **self.lr_schedule_args)
        name = self.optimizer or ALGORITHMS[self.algorithm].optimizer_for(self.algorithm_args)
        optimizer = make_optimizer(name, schedule, lr=self.lr, **self.optimizer_args)
        return Settings(num_clients=self.num_clients, clients_per_round=self.sampled_per_round(), rounds=self.rounds,
                        local_steps=self.local_steps, local_epochs=self.local_epochs, batch_size=self.batch_size,
                        server_lr=self.server_lr, optimizer=optimizer, layout=layout, seed=self.seed)

    def build_algorithm(self, layout=None):
        """The run's algorithm, built with its settings and hyper-parameters (each checked on the way); a
        Federation passes the model's ``layout`` for algorithms that select tensors on the client side."""
        from .algorithms import make_algorithm

        return make_algorithm(self.algorithm, self.settings(layout), **self.algorithm_args)


def _unknown_fields_named(init):
    """Config(**values) with an unknown field raises ConfigError naming it (and the closest field), not TypeError."""

    @functools.wraps(init)
    def checked(self, *args, **values):
        known = [f.name for f in dataclasses.fields(Config)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            hint = [ALIASES[unknown[0]]] if unknown[0] in ALIASES else difflib.get_close_matches(unknown[0], known, n=1)
            raise ConfigError(f"unknown config field(s) {unknown}{f' (did you mean {hint[0]!r}?)' if hint else ''}; "
                              f"known fields: {known}")
        init(self, *args, **values)

    return checked


Config.__init__ = _unknown_fields_named(Config.__init__)


def is_device(name) -> bool:
    """Whether ``name`` names a device fedkit runs on: 'cpu', 'cuda', 'cuda:N' or 'mps'."""
    return isinstance(name, str) and name.split(":")[0] in ("cpu", "cuda", "mps")


def _validate(c: Config) -> None:
    from .algorithms import ALGORITHMS
    from .data import DATASETS, PARTITIONS
    from .data.partition import check_partition_args
    from .models import MODELS
    from .optim import OPTIMIZERS
    from .threats import make_threat

    def need(ok: bool, name: str, rule: str):
        if not ok:
            raise ConfigError(f"{name} {rule}, got {getattr(c, name)!r}")

    def known(name: str, registry):
        value = getattr(c, name)
        if not isinstance(value, str) or value not in registry:
            raise ConfigError(f"unknown {name} {value!r}; known: {', '.join(sorted(registry))}")

    known("dataset", DATASETS)
    known("partition", PARTITIONS)
    known("model", MODELS)
    known("algorithm", ALGORITHMS)
    if c.optimizer is not None:
        known("optimizer", OPTIMIZERS)
    for name in ("dataset_args", "partition_args", "model_args", "algorithm_args", "optimizer_args", "threat_args",
                 "lr_schedule_args"):
        need(isinstance(getattr(c, name), dict), name, "must be a mapping of option names to values")
    check_partition_args(c.partition, c.partition_args, supplied=("users",))  # users: the data set's own
    if "lr" in c.optimizer_args:
        raise ConfigError(f"optimizer_args cannot set lr: the client learning rate is the config field lr (got "
                          f"optimizer_args={c.optimizer_args!r})")
    for name in ("num_clients", "rounds", "batch_size", "eval_every"):
        need(_is_int(getattr(c, name)) and getattr(c, name) >= 1, name, "must be an integer ≥ 1")
    need(_is_int(c.seed) and 0 <= c.seed < 2**63, "seed", "must be an integer in [0, 2**63)")
    need(_is_int(c.snapshots) and c.snapshots >= 0, "snapshots", "must be an integer ≥ 0")
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
    need(_is_real(c.link_mbps) and c.link_mbps > 0, "link_mbps", "must be a finite number > 0")
    if c.step_seconds is not None:
        need(_is_real(c.step_seconds) and c.step_seconds >= 0, "step_seconds", "must be a finite number ≥ 0")
    if c.stop_accuracy is not None:
        need(_is_real(c.stop_accuracy) and 0 < c.stop_accuracy <= 1, "stop_accuracy", "must lie in (0, 1]")
    need(c.engine in ("auto", *ENGINES), "engine", f"must be 'auto' or one of {list(ENGINES)}")
    need(isinstance(c.compile, bool), "compile", "must be True or False")
    need(not (c.compile and c.engine == "sequential"), "compile", "needs engine 'vectorized' or 'auto', "
         "not 'sequential' (it compiles the stacked clients' gradient)")
    need(is_device(c.device), "device", "must be 'cpu', 'cuda', 'cuda:N' or 'mps'")
    # Building the algorithm (with the optimizer and schedule) and the threat checks every hyper-parameter and
    # every combination with the run's settings.
    c.build_algorithm()
    make_threat(c.threat, **c.threat_args)
    _check_tokens(c)


def _check_tokens(c: Config) -> None:
    """A model that reads token ids (one with a ``base``) needs a tokenized data set, tokenized for that base: ids
    from one vocabulary mean nothing to another."""
    from .data import DATASETS
    from .models import MODELS

    model = inspect.signature(MODELS[c.model]).parameters
    data = inspect.signature(DATASETS[c.dataset]).parameters
    if "base" not in model:
        return
    if "tokenizer" not in data:
        texts = sorted(n for n, f in DATASETS.items() if "tokenizer" in inspect.signature(f).parameters)
        raise ConfigError(f"model {c.model!r} reads token ids, but dataset {c.dataset!r} is not tokenized text; "
                          f"use one of {', '.join(texts)}")
    base = c.model_args.get("base", model["base"].default)
    tokenizer = c.dataset_args.get("tokenizer", data["tokenizer"].default)
    if base != tokenizer:
        raise ConfigError(f"dataset_args tokenizer {tokenizer!r} is not the model's base {base!r} (model_args): "
                          f"set both to the same base, e.g. dataset_args {{tokenizer: {base}}}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

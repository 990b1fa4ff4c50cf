"""Every option fedkit accepts runs: a test generated from the registries.

For every algorithm, threat, partitioner, client optimizer and lr schedule, and for each of its options: every
``Literal`` and ``bool`` choice, ``None`` where allowed, one non-default number inside the option's range and each
closed end of that range, a layer selection of each kind, and every algorithm as ``tailored``'s base. Each case
builds the Config and runs two rounds of a tiny federation on both engines, or is refused with a one-line
ConfigError naming the option. A new registry entry or option is covered without being listed here.
"""
from __future__ import annotations

import inspect
import math
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest
import torch

from fedkit import Config, ConfigError, run
from fedkit.algorithms import ALGORITHMS
from fedkit.data import PARTITIONS
from fedkit.layout import Selection
from fedkit.optim import OPTIMIZERS, SCHEDULES
from fedkit.registry import _hints
from fedkit.threats import THREATS

ROUNDS = 2
TINY = dict(dataset="digits", partition="iid", partition_args={}, num_clients=4, clients_per_round=3, model="mlp",
            model_args={"hidden": [8]}, rounds=ROUNDS, local_steps=2, batch_size=8, lr=0.05)
# The arguments a caller supplies itself (the run's settings, the partitioner's labels, ...): not options.
FIXED = {"run", "rounds", "schedule", "labels", "num_clients", "seed", "users"}
# Options an entry needs on the tiny federation: required ones; the root set of the server-trained methods (their
# default of 3,000 samples exceeds the 1,437 training digits); FedPVR's V (its default, the Linear head, is the whole
# of an MLP: refused, and tried below).
NEEDS = {("algorithm", "drag_robust"): {"root_samples": 16}, ("algorithm", "fltrust"): {"root_samples": 16},
         ("algorithm", "fedpvr"): {"layers": "output"}, ("partition", "dirichlet"): {"phi": 0.5},
         ("partition", "qskew"): {"q": 0.5}, ("partition", "quantity"): {"beta": 0.5},
         ("partition", "feddual_dirichlet"): {"alpha": 0.5},
         ("threat", "freeloaders"): {"count": 1}, ("threat", "random_scaling"): {"count": 1}}
# Config fields an entry needs: users to split (natural), enough clients to hold every class.
FIELDS = {("partition", "natural"): dict(dataset="synthetic", dataset_args={"num_users": 6, "dim": 8}),
          ("partition", "labels_per_client"): dict(num_clients=8), ("partition", "label_groups"): dict(num_clients=8)}
REQUIRED = object()  # the default of an option without one
SELECTIONS = ["all", "output", "head", "last:1", "last:2", "last:3", "batchnorm", "*.bias", ["output", "*.bias"]]


@dataclass(frozen=True)
class Case:
    kind: str  # "algorithm", "threat", "partition", "optimizer" or "lr_schedule"
    name: str
    option: str | None  # None: the entry with its needed options only
    args: dict
    fields: tuple = ()  # further config fields, (name, value) pairs

    def config(self, engine: str) -> Config:
        values = {**TINY, **FIELDS.get((self.kind, self.name), {}), **dict(self.fields), "engine": engine}
        if self.kind == "algorithm":
            values.update(algorithm=self.name, algorithm_args=self.args)
        else:
            values.update({self.kind: self.name, f"{self.kind}_args": self.args})
        return Config(**values)

    @property
    def id(self) -> str:
        value = dict(self.fields).get(self.option, self.args.get(self.option))
        return f"{self.kind}-{self.name}" + (f"-{self.option}={value!r}" if self.option else "")


def tried(hint, default) -> list:
    """The values an option of type ``hint`` is tried with besides ``default``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint == Selection:
        return [s for s in SELECTIONS if s != default]
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return ([None] if default is not None else []) + tried(inner, default)
    if origin is Literal:
        return [a for a in args if a != default]
    if hint is bool:
        return [not default]
    if origin is Annotated and args[0] in (int, float):
        return numbers(args[0], args[1], default)
    if hint in (int, float):
        return numbers(hint, "(-inf, inf)", default)
    return []


def numbers(kind: type, interval: str, default) -> list:
    """One value inside ``interval`` other than ``default``, and each closed finite end of it."""
    low, high = (float(b) for b in interval[1:-1].split(","))
    ends = [e for e, closed in ((low, interval[0] == "["), (high, interval[-1] == "]")) if closed and math.isfinite(e)]

    def inside(x):
        return (x >= low if interval[0] == "[" else x > low) and (x <= high if interval[-1] == "]" else x < high)

    start = default if isinstance(default, (int, float)) else 1.0
    guesses = [start * 2, start / 2, start + 1, (low + high) / 2, 1.0, 0.5]
    inner = next(kind(x) for x in guesses if math.isfinite(x) and inside(kind(x)) and kind(x) != default)
    return [inner, *(kind(e) for e in ends if kind(e) not in (default, inner))]


def options(factory) -> dict[str, tuple]:
    """{option: (hint, default)} of a registry entry (its keyword parameters that the caller does not fix)."""
    hints = _hints(factory)
    params = inspect.signature(factory).parameters.values()
    return {p.name: (hints.get(p.name), REQUIRED if p.default is p.empty else p.default) for p in params
            if p.name not in FIXED and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def cases() -> list[Case]:
    found = []
    for kind, registry in (("algorithm", ALGORITHMS), ("threat", THREATS), ("partition", PARTITIONS),
                           ("optimizer", OPTIMIZERS), ("lr_schedule", SCHEDULES)):
        for name, factory in registry.items():
            needed = NEEDS.get((kind, name), {})
            found.append(Case(kind, name, None, needed))
            known = options(factory)
            for option, (hint, default) in known.items():
                if (kind, name, option) == ("algorithm", "tailored", "base"):  # every algorithm as the base
                    found += [Case(kind, name, option, {**NEEDS.get((kind, base), {}), "base": base})
                              for base in ALGORITHMS if base != default]
                    continue
                for value in tried(hint, needed.get(option, default)):
                    # an option that defaults to None is tried instead of the needed ones that do (exactly one of a
                    # threat's fraction and count)
                    base = {k: v for k, v in needed.items() if default is not None or known[k][1] is not None}
                    found.append(Case(kind, name, option, {**base, option: value}))
    for name, algorithm in ALGORITHMS.items():  # every algorithm with every client optimizer
        found += [Case("algorithm", name, "optimizer", NEEDS.get(("algorithm", name), {}), (("optimizer", o),))
                  for o in OPTIMIZERS if o != algorithm.default_optimizer]
    return found


CASES = cases()


def test_the_cases_cover_every_entry_of_every_registry():
    covered = {(c.kind, c.name) for c in CASES}
    for kind, registry in (("algorithm", ALGORITHMS), ("threat", THREATS), ("partition", PARTITIONS),
                           ("optimizer", OPTIMIZERS), ("lr_schedule", SCHEDULES)):
        assert {(kind, name) for name in registry} <= covered
    assert {c.option for c in CASES if c.kind == "algorithm" and c.name == "taco"} >= {"gamma", "kappa", "detect"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_option_runs_or_is_refused_by_name(case):
    ran = 0
    for engine in ("sequential", "vectorized"):
        try:
            history = run(case.config(engine), cache=False, progress=False)
        except ConfigError as err:
            message = str(err)
            assert "\n" not in message, message
            if engine == "vectorized" and "engine" in message:
                continue  # this entry does not run on the vectorized engine, and says so
            assert case.option is not None and case.option in message, message
            return
        assert history.rounds["round"].tolist()[-1] == ROUNDS
        assert torch.isfinite(history.weights).all()
        ran += 1
    assert ran

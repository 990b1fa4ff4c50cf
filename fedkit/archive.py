"""The run archive: the finished runs behind the committed figures, kept in the repository so that a fresh clone
renders every figure without training, runs trained on another machine (a lent GPU) come back with the figures, and
a reviewer can recompute any curve from committed data.

A notebook rendered at a scale writes ``figures/<paper>/[paper/]runs/<notebook>.parquet``: every run of its process,
one row per (run, round) with the run's config key in column ``key``. Beside it ``<notebook>.clients.parquet`` holds
the per-client rows, and the rounds file's metadata holds each run's config, its divergence, its model's length and
its training provenance (device, GPU model, torch, threads, commit, training seconds). Models are not archived: an
archived run trains when its weights or snapshots are first read (``Archived``), on this machine, into the run cache.

Rendering reads a run from the archive when the run cache lacks it (``runner.Run``). A run archived by several
notebooks, each trained on its own machine, can hold copies that differ by float order: a render reads its own
notebook's copy (``RENDERING``), so that each committed figure re-renders from its own file; ``twins`` lists them.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .checkout import figures_root, in_checkout
from .errors import FedkitError
from .history import History, replacing, worker_seconds

META = b"fedkit.runs"  # the rounds file's metadata key: {config key: {config, diverged, ended_early, provenance}}
FOLDER = "runs"
RENDERING = "FEDKIT_RUNS_FILE"  # set by ``fedkit figures``: the runs file of the notebook it renders


def write(folder: Path, notebook: str, histories: dict[str, History]) -> Path | None:
    """Archive ``histories`` (by config key) in ``folder/runs/<notebook>.parquet`` (and its clients file), beside the
    runs an earlier render of that notebook archived there (a run of the same key replaced): a render of one slice or
    parametrisation (``-p``) keeps the others'; nothing when there is no run. Writers of one folder take turns
    (``locked``), so processes that archive at once (precompute workers, a render) keep each other's runs."""
    if not histories:
        return None
    path = file(folder, notebook)
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.parent):
        _frames.cache_clear()  # read what another process may have written since this one last read
        _store(path, {**(read(path) if path.exists() else {}), **histories})
    return path


def file(folder: Path, notebook: str) -> Path:
    """The runs file of ``notebook``'s figures in ``folder``."""
    return folder / FOLDER / f"{notebook}.parquet"


def drop(path: str | Path, keys: list[str]) -> list[str]:
    """Take the runs of config ``keys`` out of archive ``path`` (runs a fix to the code no longer reproduces, so that
    the next render trains them again); the keys it held, which it no longer does. A file is never left without a
    run: taking out all of them is refused (remove the file with git instead)."""
    path = Path(path)
    with locked(path.parent):
        _frames.cache_clear()
        kept = read(path)
        dropped = [key for key in keys if kept.pop(key, None) is not None]
        if not kept:
            raise FedkitError(f"dropping {len(dropped)} run(s) would leave {path} without one; remove the file instead")
        if dropped:
            _store(path, kept)
    return dropped


def merge(source: Path, target: Path) -> list[tuple[Path, int]]:
    """Add every run archived under ``source`` (another machine's figures folder, e.g. a lent GPU's) to the archive at
    the same path under ``target`` (this checkout's figures/), beside the runs held there (a run of the same key
    replaced); each target file written, with its number of runs added."""
    added = []
    for path in sorted(Path(source).glob(f"**/{FOLDER}/*.parquet")):
        if path.name.endswith(".clients.parquet") or META not in (pq.read_schema(path).metadata or {}):
            continue  # a run file's clients, or another kind of file (tables from models)
        runs = read(path)
        folder = target / path.parent.parent.relative_to(source)
        added.append((write(folder, path.name.removesuffix(".parquet"), runs), len(runs)))
    return added


@contextmanager
def locked(folder: Path):
    """Hold an exclusive lock on ``folder`` (an advisory ``flock``, where the system has it) while the block runs."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; archives are written by one process at a time there
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _store(path: Path, histories: dict[str, History]) -> None:
    runs = {key: {"config": h.config, "diverged": h.diverged, "ended_early": h.ended_early,
                  "parameters": h.parameters,
                  "provenance": {k: v for k, v in h.provenance.items() if k != "archive"},
                  "rounds": list(h.rounds.columns), "clients": list(h.clients.columns)}
            for key, h in sorted(histories.items())}
    rounds = pd.concat([h.rounds.assign(key=key) for key, h in sorted(histories.items())], ignore_index=True)
    clients = pd.concat([h.clients.assign(key=key) for key, h in sorted(histories.items())], ignore_index=True)
    table = pa.Table.from_pandas(rounds, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           META: json.dumps(runs, default=str).encode()})
    clients = pa.Table.from_pandas(clients, preserve_index=False)
    if _holds(path, table, clients):
        return
    with replacing(path.with_suffix(".clients.parquet")) as tmp:
        pq.write_table(clients, tmp, compression="zstd")
    with replacing(path) as tmp:  # last: its metadata names the runs
        pq.write_table(table, tmp, compression="zstd")
    index.cache_clear()
    _frames.cache_clear()


def _holds(path: Path, table: pa.Table, clients: pa.Table) -> bool:
    """Whether the archive at ``path`` already holds these rounds, runs and clients: rewriting it would change only
    the library versions its pandas metadata names (a render from the archive on another machine leaves it as is)."""
    clients_file = path.with_suffix(".clients.parquet")
    if not (path.exists() and clients_file.exists()):
        return False
    if (pq.read_schema(path).metadata or {}).get(META) != table.schema.metadata[META]:
        return False  # other runs or provenance: decided from the footer, without reading the tables
    return pq.read_table(path).equals(table) and pq.read_table(clients_file).equals(clients)


def read(path: str | Path) -> dict[str, History]:
    """Every run of an archive file, by config key (without models)."""
    runs, rounds, clients = _frames(Path(path))

    def rows(frame: pd.DataFrame, key: str, columns: list[str]) -> pd.DataFrame:
        return frame.loc[frame["key"] == key, columns].reset_index(drop=True)

    where = str(in_checkout(Path(path)))  # as committed provenance records it: no machine's folders
    return {key: Archived(run["config"], rows(rounds, key, run["rounds"]), rows(clients, key, run["clients"]),
                          run["diverged"], run["ended_early"], provenance={**run["provenance"], "archive": where},
                          parameters=run.get("parameters"))  # None in a file archived before it was recorded
            for key, run in runs.items()}


class Archived(History):
    """A run read from the archive: its records at once; its final model and snapshots, which the archive does not
    keep, trained on first use (``runner.run`` with the archive off, so into the run cache); its model's length as
    the archive recorded it, so that traffic in model units needs no training."""

    def __post_init__(self):  # ``parameters`` comes from the archive: reading ``weights`` here would train
        pass

    @property
    def model_at_hand(self) -> bool:
        return self._weights is not None

    @property
    def weights(self):
        return self._trained()[0]

    @weights.setter
    def weights(self, value):
        self._weights = value

    @property
    def models(self):
        return self._trained()[1]

    @models.setter
    def models(self, value):
        self._snapshots = value

    def _trained(self):
        if self._weights is None:
            from .config import Config
            from .runner import run

            trained = run(Config.from_dict(self.config), progress=False, archive=False)
            self._weights, self._snapshots = trained.weights, trained.models
        return self._weights, self._snapshots


@cache
def _frames(path: Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    try:
        runs = json.loads(pq.read_schema(path).metadata[META])
        clients_file = path.with_suffix(".clients.parquet")
        return runs, pd.read_parquet(path), pd.read_parquet(clients_file)
    except Exception as err:
        raise FedkitError(f"run archive {path} is unreadable ({type(err).__name__}: {err})") from err


@cache
def index(root: Path) -> dict[str, tuple[Path, ...]]:
    """The archive files that hold each config key, over every archive under ``root`` (read from metadata only)."""
    return keys_in(root, "", META)


def listed(root: Path, suffix: str, meta: bytes):
    """Each ``runs/*<suffix>.parquet`` file under ``root`` (no suffix: the runs files themselves), in path order, with
    its metadata ``meta`` (its entries by key), read from the schema alone; a file without it is passed over."""
    for path in sorted(Path(root).glob(f"**/{FOLDER}/*{suffix}.parquet")):
        try:
            entries = json.loads(pq.read_schema(path).metadata[meta])
        except Exception:  # noqa: BLE001 - a file without those keys (another kind); an unreadable one is named
            continue  # when a key is read from it
        yield path, entries


def keys_in(root: Path, suffix: str, meta: bytes) -> dict[str, tuple[Path, ...]]:
    """The files that hold each key, in path order, over the ``runs/*<suffix>.parquet`` files under ``root`` whose
    metadata ``meta`` names their keys (``listed``)."""
    found: dict[str, tuple[Path, ...]] = {}
    for path, keys in listed(root, suffix, meta):
        for key in keys:
            found[key] = (*found.get(key, ()), path)
    return found


def chosen(paths: tuple[Path, ...], own: str | None) -> Path:
    """Which of the files holding a key a reader takes: the notebook's own (``own``, the file it renders into)
    where it holds the key, else the last in path order."""
    return next((path for path in paths if own is not None and path == Path(own)), paths[-1])


def root() -> Path:
    """Where archives are read from: the figures folder (``fedkit.checkout.figures_root``)."""
    return figures_root().absolute()


def lookup(key: str) -> History | None:
    """The archived run of config ``key`` (the rendered notebook's own copy where it has one), or None."""
    paths = index(root()).get(key)
    return None if paths is None else read(chosen(paths, os.environ.get(RENDERING)))[key]


class Twin(NamedTuple):
    """A run archived in several files whose copies differ beyond their clocks (the columns that count seconds)."""
    key: str
    paths: tuple[Path, ...]
    accuracy: float | None  # how far apart the copies' test accuracy gets, in points; None where their lengths differ
    relative: float | None  # the largest relative difference of any other record (losses, ...); None as above


def twins(root: Path) -> list[Twin]:
    """The runs archived in more than one file under ``root`` whose copies differ beyond their clocks: copies
    trained on different machines or thread counts part by float order, and a render reads its own notebook's."""
    found = []
    for key, paths in index(root.absolute()).items():
        if len(paths) < 2:
            continue
        copies = [read(path)[key].rounds for path in paths]
        records = [frame.drop(columns=[c for c in frame.columns if "seconds" in c]) for frame in copies]
        if all(frame.equals(records[0]) for frame in records[1:]):
            continue
        if any(frame.shape != records[0].shape for frame in records):
            found.append(Twin(key, paths, None, None))
            continue
        floats = [frame.select_dtypes("float") for frame in records]
        gaps = [(values - floats[0]).abs() for values in floats[1:]]
        found.append(Twin(key, paths, 100 * _largest(gap[["test_accuracy"]] for gap in gaps),
                          _largest(gap / floats[0].abs().clip(lower=1e-12) for gap in gaps)))
    return found


def _largest(frames) -> float:
    """The largest value over ``frames``, their NaNs (rounds not tested) left out; 0 when there is none."""
    return float(max(np.nanmax(frame.to_numpy(), initial=0.0) for frame in frames))


def spent(root: Path) -> pd.DataFrame:
    """The training the archives under ``root`` record, one row per (paper, scale, device, threads): its runs and
    ``hours``, the wall hours of one worker (a process on the CPU, or a GPU) they took. A run trained in a stack
    (``stacked_with``) counts its share of the stack's seconds, and a resumed run each segment's on its own device; a
    run archived in several files counts once per training (its copies of one training share their provenance), under
    the paper and scale of the first file in path order (``figures/<paper>/[paper/]runs/``)."""
    trainings: dict[tuple, tuple[str, str, list[dict]]] = {}
    for path, runs in listed(root, "", META):
        paper, folder = path.relative_to(root).parts[:2]
        for key, run in runs.items():
            made = run["provenance"]
            training = (key, made.get("commit"), made.get("train_seconds"))
            trainings.setdefault(training, (paper, "paper" if folder == "paper" else "small",
                                            made.get("segments") or [made]))
    rows = [{"paper": paper, "scale": scale, "device": segment.get("gpu") or segment["device"],
             "threads": segment.get("threads"), "run": training[0],
             "hours": worker_seconds(segment) / 3600}
            for training, (paper, scale, segments) in trainings.items() for segment in segments]
    columns = ["paper", "scale", "device", "threads"]
    if not rows:
        return pd.DataFrame(columns=[*columns, "runs", "hours"])
    return (pd.DataFrame(rows).groupby(columns, dropna=False)
            .agg(runs=("run", "nunique"), hours=("hours", "sum")).reset_index())

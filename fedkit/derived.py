"""Tables computed from a run's model or a replay of its training (a loss surface, per-client gradient norms, a
trace of an algorithm's state), kept in the run archive beside the run, so that a figure built on them renders on a
fresh clone without training again (the run archive keeps no models).

``table(history, analysis, compute, **params)`` is the table of (the run, ``analysis``, ``params``): the one this
process already has, else the archived one, else ``compute()``'s. A render archives every table it used
(``figures.save_table``) in ``runs/<notebook>.derived.parquet``: one row per table row, column ``derived`` naming the
table, whose run, analysis, parameters, columns and dtypes the file's metadata holds. During a render each table
joins that file as soon as it is computed, so a render cut off (a session's end) keeps the tables it computed. The
key does not cover the analysis's code: after a fix to it, remove the notebook's derived file (``git rm``) so that
its next render recomputes.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .archive import FOLDER, chosen, keys_in, locked, root
from .errors import FedkitError
from .history import History, replacing

META = b"fedkit.derived"  # {table key: {run, analysis, params, columns, dtypes}}
SUFFIX = ".derived.parquet"
USED: dict[str, tuple[dict, pd.DataFrame]] = {}  # this process's tables by key: (their description, the table)
RENDERING = "FEDKIT_DERIVED_FILE"  # set by ``fedkit figures``: the tables file of the notebook it renders


def key(run: str, analysis: str, params: dict) -> str:
    """A table's key: a digest of its run's config key, the analysis and its parameters."""
    text = json.dumps({"run": run, "analysis": analysis, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def table(history: History, analysis: str, compute: Callable[[], pd.DataFrame], **params) -> pd.DataFrame:
    """The table ``compute()`` makes from ``history``'s run with ``params`` (which must name everything besides the
    run that the table depends on), computed only when neither this process nor the run archive has it."""
    from .config import Config

    run = Config.from_dict(history.config).key()
    k = key(run, analysis, params)
    if k not in USED:
        found = lookup(k)
        frame = found if found is not None else compute()
        if not isinstance(frame, pd.DataFrame):
            raise FedkitError(f"derived table {analysis!r} of run {run}: compute() returned a {type(frame).__name__}, "
                              "not a DataFrame")
        USED[k] = ({"run": run, "analysis": analysis, "params": params}, frame)
        if found is None and RENDERING in os.environ:
            _store(Path(os.environ[RENDERING]))  # at once: a render cut off later keeps the tables computed so far
    return USED[k][1].copy()


def used() -> dict[str, dict]:
    """The tables this process used, by key: their run, analysis and parameters (for a figure's provenance)."""
    return {k: description for k, (description, _) in USED.items()}


def write(folder: Path, notebook: str) -> Path | None:
    """Archive this process's tables in ``folder/runs/<notebook>.derived.parquet``, beside those an earlier render
    archived there; nothing when there is none."""
    return _store(file(folder, notebook)) if USED else None


def file(folder: Path, notebook: str) -> Path:
    """The derived-tables file of ``notebook``'s figures in ``folder``."""
    return folder / FOLDER / f"{notebook}{SUFFIX}"


def _store(path: Path) -> Path:
    """Add this process's tables to the file ``path`` (a table of the same key replaced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.parent):  # writers of one folder take turns, each reading what the one before wrote
        _read.cache_clear()
        tables = {**(_read(path) if path.exists() else {}), **USED}
        meta = {k: {**description, "columns": list(frame.columns), "dtypes": frame.dtypes.astype(str).tolist()}
                for k, (description, frame) in sorted(tables.items())}
        rows = pd.concat([frame.assign(derived=k) for k, (_, frame) in sorted(tables.items())], ignore_index=True)
        arrow = pa.Table.from_pandas(rows, preserve_index=False)
        arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), META: json.dumps(meta, default=str)})
        with replacing(path) as tmp:
            pq.write_table(arrow, tmp, compression="zstd")
    index.cache_clear()
    _read.cache_clear()
    return path


@cache
def _read(path: Path) -> dict[str, tuple[dict, pd.DataFrame]]:
    try:
        meta = json.loads(pq.read_schema(path).metadata[META])
        rows = pd.read_parquet(path)
    except Exception as err:
        raise FedkitError(f"derived tables {path} are unreadable ({type(err).__name__}: {err})") from err
    out = {}
    for k, m in meta.items():
        frame = rows.loc[rows["derived"] == k, m["columns"]].reset_index(drop=True)
        out[k] = ({n: m[n] for n in ("run", "analysis", "params")}, frame.astype(dict(zip(m["columns"], m["dtypes"]))))
    return out


@cache
def index(figures: Path) -> dict[str, tuple[Path, ...]]:
    """The files that hold each table key, over every derived-tables file under ``figures`` (metadata only)."""
    return keys_in(figures, ".derived", META)


def runs_with_tables(figures: Path) -> set[str]:
    """The config keys of the runs that some archived table under ``figures`` was computed from (metadata only)."""
    found = set()
    for path in set().union(*index(figures.absolute()).values()):
        found |= {m["run"] for m in json.loads(pq.read_schema(path).metadata[META]).values()}
    return found


def lookup(k: str) -> pd.DataFrame | None:
    """The archived table of key ``k`` (the rendered notebook's own copy where it has one), or None."""
    paths = index(root()).get(k)
    return None if paths is None else _read(chosen(paths, os.environ.get(RENDERING)))[k][1]

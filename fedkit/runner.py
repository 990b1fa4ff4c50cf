"""run(config) -> History: iterate a Federation's rounds and add what an experiment needs around them — the result
cache, checkpoint/resume, the evaluation schedule, divergence, per-round and per-client records and the simulated
clock (compute + traffic over the link)."""
from __future__ import annotations

import hashlib
import io
import itertools
import os
import shutil
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .config import Config
from .errors import FedkitError
from .federation import Federation, FedState, Round
from .history import History, replacing

LINK_UNIT = 2**20  # bit/s per "Mbit/s" of the simulated link (algorithms-seed §3.6)


def default_cache() -> Path:
    return Path(os.environ.get("FEDKIT_CACHE", Path.home() / ".cache" / "fedkit" / "runs"))


def run(cfg: Config, *, cache: str | Path | bool | None = None, progress: bool = True,
        callbacks: tuple[Callable[[dict, torch.Tensor], None], ...] = ()) -> History:
    """Train ``cfg`` and return its History.

    ``cache``: a directory (default $FEDKIT_CACHE or ~/.cache/fedkit/runs), or False for none. A finished
    run with the same config hash is loaded instead of retrained; an unfinished one resumes from its
    checkpoint (written after every round). ``callbacks`` get each round's record after it is logged.
    """
    run_dir = None if cache is False else Path(default_cache() if cache in (None, True) else cache) / cfg.key()
    if run_dir is not None and (run_dir / "meta.json").exists():
        try:
            return History.load(run_dir)
        except FedkitError as err:
            _set_aside(run_dir, f"{err}; training it again")
    fed = Federation(cfg)
    saved = _load_checkpoint(run_dir) if run_dir is not None else None
    if saved is not None:
        s, round_rows, client_rows = FedState(**saved["state"]), saved["rounds"], saved["clients"]
    else:
        s, client_rows = fed.initial(), []
        round_rows = [{"round": 0, **fed.evaluate_all(s), "diverged": False}]

    diverged = any(r["diverged"] for r in round_rows)
    bar = tqdm(total=cfg.rounds, initial=s.t, disable=not progress or diverged,
               desc=f"{cfg.algorithm} ({fed.engine_name})")
    for rnd in ([] if diverged else fed.rounds(s)):
        wall = time.perf_counter()
        s, result = rnd.after, rnd.result
        diverged = not (bool(torch.isfinite(s.w).all()) and bool(torch.isfinite(result.train_loss).all()))
        evaluated = not diverged and (s.t % cfg.eval_every == 0 or s.t == cfg.rounds or rnd.stranded)
        scores = fed.evaluate_all(s) if evaluated else {"test_accuracy": np.nan, "test_loss": np.nan}
        diverged = diverged or (evaluated and not np.isfinite(scores["test_loss"]))
        clients = _client_rows(fed, rnd)
        client_rows += clients
        record = {"round": s.t, **scores, "train_loss": float(result.train_loss.mean()),
                  "clients": len(clients), "client_seconds_max": max(result.seconds, default=0.0),
                  "client_seconds_sum": sum(result.seconds), "seconds": time.perf_counter() - wall,
                  "bytes_up": sum(r["bytes_up"] for r in clients), "bytes_down": sum(r["bytes_down"] for r in clients),
                  "sim_seconds": _simulated_seconds(cfg, rnd, clients), "engine": fed.engine_name, "diverged": diverged}
        round_rows.append(record)
        if run_dir is not None:
            _save_checkpoint(run_dir, {"state": asdict(s), "rounds": round_rows, "clients": client_rows})
        bar.update()
        bar.set_postfix(acc=f"{scores['test_accuracy']:.4f}", loss=f"{record['train_loss']:.4f}")
        for callback in callbacks:
            callback(record, s.w)
        if diverged or (cfg.stop_accuracy is not None and scores["test_accuracy"] >= cfg.stop_accuracy):
            break
    bar.close()

    last = round_rows[-1]["round"]
    ended_early = (f"no eligible client left after round {last} (every honest client was expelled)"
                   if fed.nobody_eligible(s.server) and last < cfg.rounds else None)
    history = History(cfg.to_dict(), pd.DataFrame(round_rows), pd.DataFrame(client_rows), diverged, ended_early, s.w)
    if run_dir is not None:
        history.save(run_dir, fmt="parquet")
        for name in ("checkpoint.pt", "checkpoint.prev.pt"):
            (run_dir / name).unlink(missing_ok=True)
    return history


def _client_rows(fed: Federation, rnd: Round) -> list[dict]:
    """One record per sampled client; a threat's clients that did not train have no steps, loss or time."""
    down = 4 * (rnd.after.w.numel() + sum(v[0].numel() for v in rnd.message.values()))
    up = fed.algorithm.bytes_up(rnd.uploads).tolist() if rnd.uploads else [0] * len(rnd.clients)
    trained = iter(zip(rnd.plans, rnd.result.train_loss.tolist(), rnd.result.seconds))
    rows = []
    for j, i in enumerate(rnd.clients):
        plan, loss, seconds = next(trained) if rnd.trained[j] else (None, np.nan, 0.0)
        rows.append({"round": rnd.info.t, "client": int(i), "samples": int(fed.sizes[i]),
                     "steps": plan.steps if plan else 0, "train_loss": loss, "seconds": seconds,
                     "bytes_up": int(up[j]), "bytes_down": down, "honest": bool(rnd.trained[j]),
                     **{k: float(v[j]) for k, v in rnd.metrics.items()}})
    return rows


def _simulated_seconds(cfg: Config, rnd: Round, clients: list[dict]) -> float:
    """A round on the simulated clock: the slowest client's compute (measured, or ``step_seconds`` per local
    step) + what one client receives and the mean client upload over the link (algorithms-seed §3.6)."""
    compute = (cfg.step_seconds * max(r["steps"] for r in clients) if cfg.step_seconds is not None
               else max(rnd.result.seconds, default=0.0))
    bits = 8 * (clients[0]["bytes_down"] + np.mean([r["bytes_up"] for r in clients]))
    return float(compute + bits / (cfg.link_mbps * LINK_UNIT))


# ---- checkpoints: a digest catches corruption; a bad one is set aside and the previous one (or round 0) used
def _save_checkpoint(run_dir: Path, payload: dict) -> None:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    run_dir.mkdir(parents=True, exist_ok=True)
    current, previous = run_dir / "checkpoint.pt", run_dir / "checkpoint.prev.pt"
    with replacing(current) as path:
        path.write_bytes(hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
        if current.exists():
            os.replace(current, previous)  # the previous checkpoint stays until the new one is in place


def _load_checkpoint(run_dir: Path) -> dict | None:
    for path in (run_dir / "checkpoint.pt", run_dir / "checkpoint.prev.pt"):
        if not path.exists():
            continue
        raw = path.read_bytes()
        digest, _, data = raw.partition(b"\n")
        try:
            if hashlib.sha256(data).hexdigest().encode() != digest:
                raise ValueError("its checksum does not match its contents")
            return torch.load(io.BytesIO(data), weights_only=False)
        except Exception as err:  # any unreadable checkpoint: set it aside, never block the rerun
            corrupt = path.with_name(path.name + ".corrupt")
            os.replace(path, corrupt)
            warnings.warn(f"checkpoint {path} is corrupt ({err}); moved to {corrupt.name}, resuming from an "
                          "earlier state", stacklevel=3)
    return None


def _set_aside(run_dir: Path, why: str) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    names = (run_dir.with_name(f"{run_dir.name}.corrupt-{stamp}-{n}") for n in itertools.count())
    aside = next(name for name in names if not name.exists())
    os.replace(run_dir, aside)
    warnings.warn(f"cached run {run_dir} is unreadable ({why}); moved to {aside.name}", stacklevel=3)


def clear_cache(cfg: Config, cache: str | Path | None = None) -> None:
    """Forget the cached result (and checkpoint) of ``cfg``."""
    shutil.rmtree(Path(cache or default_cache()) / cfg.key(), ignore_errors=True)

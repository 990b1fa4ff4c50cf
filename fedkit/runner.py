"""run(config) -> History: iterate a Federation's rounds and add what an experiment needs around them — the result
cache, checkpoint/resume, the evaluation schedule, divergence, per-round and per-client records and the simulated
clock (compute + traffic over the link).

One process at a time trains a cache entry: ``run`` and ``run_together`` lock each config's entry (``.<key>.lock``
beside it) from reading the cache to saving the result. A second run of the same config, in another process, says
that it waits, then reads the finished result, or resumes the checkpoint of a run that stopped early.

A finished run that did not stop early keeps its last checkpoint (``final.pt``): a run of the same config with more
rounds goes on from the longest such run, unless the round count changes their shared rounds (a learning-rate
schedule over T, TACO's λ = ⌈T/5⌉); it says which on stderr. Only what the algorithm sets when it is built is
compared: one that read ``run.rounds`` while it trains would go unnoticed."""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import io
import itertools
import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .algorithms import Algorithm
from .archive import lookup
from .config import Config, is_device
from .engine import ClientInput, RoundResult
from .errors import ConfigError, FedkitError
from .federation import Federation, FedState, Round
from .history import History, replacing
from .provenance import machine

LINK_UNIT = 2**20  # bit/s per "Mbit/s" of the simulated link (algorithms-seed §3.6)
SEEN: dict[str, Config] = {}  # every config run (trained or read from the cache) in this process, by key
FINISHED: dict[str, History] = {}  # their finished histories, without models (what ``fedkit.archive`` keeps)
UNCACHED: set[str] = set()  # the keys of those run without a cache (timings): every render trains them again


def seen_configs() -> dict[str, Config]:
    """The configs this process has run so far, by key (a figure's provenance records them)."""
    return dict(SEEN)


def uncached_keys() -> set[str]:
    """The keys of the configs this process ran without a cache (``cache=False``: timings of this machine)."""
    return set(UNCACHED)


def finished_histories() -> dict[str, History]:
    """The histories of the runs this process finished or read, by key, without models."""
    return dict(FINISHED)


def default_cache() -> Path:
    return Path(os.environ.get("FEDKIT_CACHE", Path.home() / ".cache" / "fedkit" / "runs"))


def cached_devices() -> list[str]:
    """$FEDKIT_CACHED_ON: the other devices whose finished runs count as this config's (``fedkit figures
    --cached-on``), e.g. a campaign trained on a GPU and rendered on a laptop."""
    devices = [d.strip() for d in os.environ.get("FEDKIT_CACHED_ON", "").split(",") if d.strip()]
    for d in devices:
        if not is_device(d):
            raise ConfigError(f"FEDKIT_CACHED_ON names device {d!r}; expected cpu, cuda[:N] or mps")
    return devices


def finished_run(cfg: Config, root: Path | None, archived: bool = True) -> Config | None:
    """The config whose finished run in the cache (or, ``archived``, the run archive) stands for ``cfg``'s: its own,
    else the one run on a device of ``cached_devices()`` (the history and the figure's provenance then name the device
    that trained it), else None."""
    if root is None:
        return None
    return next((c for c in (cfg, *(cfg.replace(device=d) for d in cached_devices()))
                 if (root / c.key() / "meta.json").exists() or (archived and lookup(c.key()) is not None)),
                None)


def rounds_left(cfg: Config, cache: str | Path | None = None) -> int:
    """How many of ``cfg``'s rounds its run would still train, read from the cache without changing it: none once it
    finished (here, or on a device of ``cached_devices()``), those after its newest readable checkpoint, those after
    the finished shorter run it would go on from (``_extension``), or all."""
    root = Path(cache or default_cache())
    if finished_run(cfg, root) is not None:
        return 0
    for path in (root / cfg.key() / name for name in CHECKPOINTS):
        try:
            return cfg.rounds - _read_checkpoint(path)["state"]["t"]
        except Exception:  # absent or unreadable: the run would go on from the next one, or from round 1
            continue
    shorter = _shorter_run(cfg, root)
    return cfg.rounds - (shorter.rounds if shorter is not None and _rounds_dependence(shorter, cfg) is None else 0)


def run(cfg: Config, *, cache: str | Path | bool | None = None, progress: bool = True,
        callbacks: tuple[Callable[[dict, torch.Tensor], None], ...] = (), archive: bool = True) -> History:
    """Train ``cfg`` and return its History.

    ``cache``: a directory (default $FEDKIT_CACHE or ~/.cache/fedkit/runs), or False for none. A finished
    run with the same config hash is loaded instead of retrained; an unfinished one resumes from its
    checkpoint (written after every round); one being trained by another process is waited for; one the cache
    lacks is read from the run archive (``archive``: its models train on first use).
    ``callbacks`` get each round's record after it is logged.
    """
    with _entries_locked([cfg], cache):
        r = Run(cfg, cache=cache, progress=progress, callbacks=callbacks, archive=archive)
        r.train_alone()
        return r.finish()


class Run:
    """One config's run around its rounds: the cache, checkpoint/resume, the evaluation schedule, divergence,
    records and the simulated clock. ``history`` is set at once for a cached run; otherwise feed it the rounds
    from ``state`` on (``record``, True once the run must stop) and ``finish``."""

    def __init__(self, cfg: Config, *, cache=None, progress: bool = True, callbacks=(), archive: bool = True):
        root = _cache_root(cache)
        cfg = finished_run(cfg, root, archive) or cfg
        self.cfg, self.callbacks, self.history = cfg, callbacks, None
        SEEN[cfg.key()] = cfg
        if root is None:
            UNCACHED.add(cfg.key())
        self.run_dir = None if root is None else root / cfg.key()
        if self.run_dir is not None and (self.run_dir / "meta.json").exists():
            try:
                self.history = History.load(self.run_dir)
                return
            except FedkitError as err:
                _set_aside(self.run_dir, err)
        if root is not None and archive and (archived := lookup(cfg.key())) is not None:
            self.history = archived  # not in this machine's cache: read from the committed run archive
            return
        started = self.run_dir is not None and any((self.run_dir / n).exists() for n in CHECKPOINTS)
        saved = _load_checkpoint(self.run_dir) if started else _extension(cfg, root)
        kept = _engine_of(saved) if cfg.engine == "auto" else None  # a resumed run keeps its engine: one history,
        self.fed = fed = Federation(cfg if kept is None else cfg.replace(engine=kept))  # whatever "auto" picks now
        if saved is not None:
            self.state = FedState(**saved["state"])
            self.round_rows, self.client_rows = saved["rounds"], saved["clients"]
            self.models = saved.get("models", {})
        else:
            self.state, self.client_rows, self.models = fed.initial(), [], {}
            self.round_rows = [{"round": 0, **fed.evaluate_all(self.state), "diverged": False}]
        if started:  # said even with progress off: the run does not start at round 1 as asked, or starts again
            print(f"fedkit: {cfg.algorithm} run {cfg.key()} resumes from its checkpoint after round {self.state.t} "
                  f"of {cfg.rounds}" if saved is not None else
                  f"fedkit: {cfg.algorithm} run {cfg.key()} starts again at round 1 (no readable checkpoint)",
                  file=sys.stderr)
        self.diverged = any(r["diverged"] for r in self.round_rows)
        self.stopped = self.diverged
        self.bar = tqdm(total=cfg.rounds, initial=self.state.t, disable=not progress or self.diverged,
                        desc=f"{cfg.algorithm} ({fed.engine_name})")
        self.wall = time.perf_counter()
        self.compiled = 0.0  # the engine's compile seconds already recorded
        self.resumed_after = self.state.t  # 0 unless it resumed from a checkpoint
        self.earlier = _segments_before(saved)  # the processes that trained the rounds before, as they recorded them
        self.stack: list[str] = []  # the keys of the seeds it trained beside, in one stack (``run_together``)

    @property
    def active(self) -> bool:
        """Whether another round is to be trained."""
        return self.history is None and not self.stopped and self.fed.continues(self.state)

    def train_alone(self) -> None:
        """Train the remaining rounds with this run's own engine (nothing for a cached, finished or diverged run)."""
        if self.active:
            for rnd in self.fed.rounds(self.state):
                if self.record(rnd):
                    break

    def record(self, rnd: Round) -> bool:
        """Log round ``rnd`` (evaluate, check divergence, checkpoint); True when the run must stop."""
        cfg, fed = self.cfg, self.fed
        self.state = s = rnd.after
        result = rnd.result
        diverged = not (bool(torch.isfinite(s.w).all()) and bool(torch.isfinite(result.train_loss).all()))
        evaluated = not diverged and (s.t % cfg.eval_every == 0 or s.t == cfg.rounds or rnd.stranded)
        scores = fed.evaluate_all(s) if evaluated else {"test_accuracy": np.nan, "test_loss": np.nan}
        self.diverged = diverged = diverged or (evaluated and not np.isfinite(scores["test_loss"]))
        clients = _client_rows(fed, rnd)
        self.client_rows += clients
        now = time.perf_counter()
        record = {"round": s.t, **scores, "train_loss": float(result.train_loss.mean()),
                  "clients": len(clients), "client_seconds_max": max(result.seconds, default=0.0),
                  "client_seconds_sum": sum(result.seconds), "seconds": now - self.wall,
                  "bytes_up": sum(r["bytes_up"] for r in clients), "bytes_down": sum(r["bytes_down"] for r in clients),
                  "sim_seconds": _simulated_seconds(cfg, rnd, clients), "engine": fed.engine_name, "diverged": diverged}
        if cfg.compile:  # the compile time spent in this round (compile=True), inside its client seconds
            record["compile_seconds"] = fed.engine.compile_seconds - self.compiled
            self.compiled = fed.engine.compile_seconds
        self.round_rows.append(record)
        if cfg.snapshots and (s.t % cfg.snapshots == 0 or s.t == cfg.rounds):
            self.models[s.t] = s.w.detach().cpu().clone()
        if self.run_dir is not None:
            _save_checkpoint(self.run_dir, {"state": asdict(s), "rounds": self.round_rows, "clients": self.client_rows,
                                            "models": self.models, "segments": self._segments()}, cfg)
        self.bar.update()
        self.bar.set_postfix(acc=f"{scores['test_accuracy']:.4f}", loss=f"{record['train_loss']:.4f}")
        for callback in self.callbacks:
            callback(record, s.w)
        self.wall = time.perf_counter()
        self.stopped = diverged or (cfg.stop_accuracy is not None and scores["test_accuracy"] >= cfg.stop_accuracy)
        return self.stopped

    def finish(self) -> History:
        """The run's History (saved to the cache, checkpoints removed)."""
        if self.history is None:
            self._save()
        FINISHED[self.cfg.key()] = dataclasses.replace(self.history, weights=None, models={})
        return self.history

    def _save(self) -> None:
        """Build the History, save it to the cache and remove the checkpoints."""
        self.bar.close()
        cfg, s = self.cfg, self.state
        last = self.round_rows[-1]["round"]
        ended_early = (f"no eligible client left after round {last} (every honest client was expelled)"
                       if self.fed.nobody_eligible(s.server) and last < cfg.rounds else None)
        self.history = History(cfg.to_dict(), pd.DataFrame(self.round_rows), pd.DataFrame(self.client_rows),
                               self.diverged, ended_early, s.w, self.models, self._provenance())
        if self.run_dir is not None:
            self.history.save(self.run_dir, fmt="parquet")
            if not self.stopped and last == cfg.rounds:  # a longer run of this config may go on from its last state
                os.replace(self.run_dir / CHECKPOINTS[0], self.run_dir / FINAL)
            for name in (*CHECKPOINTS, CONFIG):
                (self.run_dir / name).unlink(missing_ok=True)
            for stray in self.run_dir.glob(".*.tmp"):  # a write cut short by a kill (``replacing`` names them)
                pid = stray.name.split(".")[-2]
                if not (pid.isdigit() and _alive(int(pid))):
                    stray.unlink(missing_ok=True)

    def _provenance(self) -> dict:
        """The machine that trained the run's last rounds and its training seconds: the sum of its rounds' wall seconds
        (a stack's seeds each count the whole stack's); ``segments`` records each process that trained some rounds
        (a resumed run's earlier rounds may have trained elsewhere, on another engine or in another stack)."""
        seconds = sum(r["seconds"] for r in self.round_rows if r["round"] > 0)
        return {**machine(self.cfg.device), "train_seconds": round(seconds, 2),
                "resumed_after_round": self.resumed_after, "stacked_with": self._stacked_with(),
                "segments": self._segments()}

    def _stacked_with(self) -> list[str]:
        return [k for k in self.stack if k != self.cfg.key()]

    def _segments(self) -> list[dict]:
        """The training segments so far: the earlier processes' and, once it trained a round, this one's."""
        rows = [r for r in self.round_rows if r["round"] > self.resumed_after]
        if not rows:
            return self.earlier
        return [*self.earlier, {"rounds": [self.resumed_after + 1, rows[-1]["round"]], **machine(self.cfg.device),
                                "engine": self.fed.engine_name, "stacked_with": self._stacked_with(),
                                "train_seconds": round(sum(r["seconds"] for r in rows), 2)}]


def run_together(cfgs: list[Config], **run_args) -> list[History]:
    """Configs that differ only in their seed, trained in lockstep: each round the clients of every seed train in
    ONE call of the vectorized engine (a taller stack; its per-step overhead is paid once). Each seed keeps its own
    random streams, cache entry and checkpoints, and its history equals its own ``run``'s to float tolerance.
    Seeds that resume from checkpoints of different rounds train only the rounds behind until they are in step (a
    stack shares one round's η_l and t). Configs the vectorized engine would not run, or whose data or frozen
    parameters differ, run one by one. Another process's runs of these configs are waited for, as in ``run``."""
    with _entries_locked(cfgs, run_args.get("cache")):
        return _run_together(cfgs, **run_args)


def _run_together(cfgs: list[Config], **run_args) -> list[History]:
    runs = [Run(cfg, **run_args) for cfg in cfgs]
    live = [r for r in runs if r.history is None]
    if not _share_an_engine(live):
        for r in live:
            r.train_alone()
        return [r.finish() for r in runs]
    engine = live[0].fed.engine
    for r in live:
        r.stack = [x.cfg.key() for x in live]
    while live := [r for r in live if r.active]:
        first = min(r.state.t for r in live)
        behind = [r for r in live if r.state.t == first]
        sent = [r.fed.send(r.state) for r in behind]
        result = engine.train(_join([x.inputs for x in sent]), [p for x in sent for p in x.plans], {})
        stops = []
        for r, x, part in zip(behind, sent, _split(result, [len(x.plans) for x in sent])):
            try:
                r.record(r.fed.receive(x, part))
            except Exception as err:  # e.g. a callback's deadline: the other seeds still record (checkpoint) this round
                stops.append(err)
        if stops:
            raise stops[0]
    return [r.finish() for r in runs]


def _cache_root(cache) -> Path | None:
    """The run cache of a ``cache`` argument: None for False (no cache), else the folder."""
    return None if cache is False else Path(default_cache() if cache in (None, True) else cache)


@contextmanager
def _entries_locked(cfgs: list[Config], cache):
    """Hold the cache entries of ``cfgs`` against other processes (one lock file each, removed on release)."""
    root = _cache_root(cache)
    keys = [] if root is None else sorted({c.key() for c in cfgs})  # one order in every process: no deadlock
    held = []
    try:
        for key in keys:
            held.append((root / f".{key}.lock", _lock(root / f".{key}.lock", key)))
        yield
    finally:
        for path, fd in held:
            path.unlink(missing_ok=True)  # before the release: a waiter then finds its file gone and locks anew
            os.close(fd)


def _lock(path: Path, key: str) -> int:
    """An exclusive lock on the file ``path``, waited for (and said so) while another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    said = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not said:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                print(f"fedkit: run {key} is being trained by process {holder}; waiting for it to finish",
                      file=sys.stderr, flush=True)
                said = True
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                os.ftruncate(fd, 0)
                os.pwrite(fd, str(os.getpid()).encode(), 0)
                return fd
        except FileNotFoundError:  # its holder removed it on release
            pass
        os.close(fd)


def _share_an_engine(runs: list[Run]) -> bool:
    if len(runs) < 2:
        return False
    first = runs[0]  # the configs as asked: a resumed run's Federation holds its checkpoint's engine, not "auto"
    data = first.fed
    return all(r.fed.engine_name == "vectorized" and r.cfg.replace(seed=0) == first.cfg.replace(seed=0)
               and torch.equal(r.fed.x_train, data.x_train) and torch.equal(r.fed.y_train, data.y_train)
               and all(torch.equal(v, data.fm.frozen[k]) for k, v in r.fed.fm.frozen.items()) for r in runs)


def _join(inputs: list[ClientInput]) -> ClientInput:
    """Several federations' training clients as one stack (same round, same η_l)."""
    first = inputs[0]
    cat = lambda key: {k: torch.cat([getattr(c, key)[k] for c in inputs]) for k in getattr(first, key)}  # noqa: E731
    return ClientInput(torch.cat([c.w0 for c in inputs]), cat("recv"), cat("kept"),
                       torch.cat([c.steps for c in inputs]), first.lr, first.t)


def _split(result: RoundResult, counts: list[int]) -> list[RoundResult]:
    """The joined round's result, cut back into each federation's clients."""
    parts, start = [], 0
    for n in counts:
        rows = slice(start, start + n)
        parts.append(RoundResult({k: v[rows] for k, v in result.uploads.items()},
                                 {k: v[rows] for k, v in result.kept.items()}, result.train_loss[rows],
                                 result.seconds[rows]))
        start += n
    return parts


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
                     "bytes_up": int(up[j]), "bytes_down": down, "honest": not bool(fed.threat.bad[i]),
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
CHECKPOINTS = ("checkpoint.pt", "checkpoint.prev.pt")
CONFIG = "config.json"  # an unfinished run's config (a finished one's is in meta.json), for ``fedkit cache``
FINAL = "final.pt"  # a finished run's last checkpoint, for a longer run of its config (``_extension``)


def _save_checkpoint(run_dir: Path, payload: dict, cfg: Config) -> None:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    run_dir.mkdir(parents=True, exist_ok=True)
    if not (run_dir / CONFIG).exists():
        (run_dir / CONFIG).write_text(json.dumps(cfg.to_dict(), default=str))
    current, previous = run_dir / "checkpoint.pt", run_dir / "checkpoint.prev.pt"
    with replacing(current) as path:
        path.write_bytes(hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
        if current.exists():
            os.replace(current, previous)  # the previous checkpoint stays until the new one is in place


def _segments_before(saved: dict | None) -> list[dict]:
    """The training segments a checkpoint records; one unrecorded segment for its rounds where it predates them."""
    if saved is None or not (t := saved["state"]["t"]):
        return []
    return saved.get("segments", [{"rounds": [1, t], "recorded": False}])


def _engine_of(saved: dict | None) -> str | None:
    """The engine that trained a checkpoint's last round (None: no checkpoint, or no round trained yet)."""
    rows = saved["rounds"] if saved is not None else []
    return next((r["engine"] for r in reversed(rows) if r.get("engine")), None)


def _read_checkpoint(path: Path) -> dict:
    digest, _, data = path.read_bytes().partition(b"\n")
    if hashlib.sha256(data).hexdigest().encode() != digest:
        raise ValueError("its checksum does not match its contents")
    return torch.load(io.BytesIO(data), weights_only=False)


def _load_checkpoint(run_dir: Path, names: tuple[str, ...] = CHECKPOINTS) -> dict | None:
    for path in (run_dir / name for name in names):
        if not path.exists():
            continue
        try:
            return _read_checkpoint(path)
        except Exception as err:  # any unreadable checkpoint: set it aside, never block the rerun
            corrupt = path.with_name(path.name + ".corrupt")
            os.replace(path, corrupt)
            warnings.warn(f"checkpoint {path} is corrupt ({err}); moved to {corrupt.name}", stacklevel=3)
    return None


def _extension(cfg: Config, root: Path | None) -> dict | None:
    """The last checkpoint of the longest finished run of ``cfg`` with fewer rounds (and all else equal), for ``cfg``'s
    run to go on from, as the rows a run of ``cfg`` would have written; None where there is none, or where the round
    count changes the rounds they share (then it says why on stderr)."""
    shorter = _shorter_run(cfg, root)
    if shorter is None:
        return None
    why = _rounds_dependence(shorter, cfg)
    if why is not None:
        print(f"fedkit: {cfg.algorithm} run {cfg.key()} starts at round 1, not after the finished "
              f"{shorter.rounds}-round run {shorter.key()}: {why}", file=sys.stderr)
        return None
    saved = _load_checkpoint(root / shorter.key(), (FINAL,))
    if saved is None:
        return None
    last = saved["rounds"][-1]
    if shorter.rounds % cfg.eval_every:  # tested only as the shorter run's last round
        saved["rounds"][-1] = {**last, **{k: np.nan for k in last if k.startswith("test_")}}
    if cfg.snapshots and shorter.rounds % cfg.snapshots:  # kept only as its last round
        saved["models"].pop(shorter.rounds)
    print(f"fedkit: {cfg.algorithm} run {cfg.key()} goes on from the finished {shorter.rounds}-round run "
          f"{shorter.key()} after round {shorter.rounds} of {cfg.rounds}", file=sys.stderr)
    return saved


def _shorter_run(cfg: Config, root: Path | None) -> Config | None:
    """The finished run in ``root`` with a final state, of ``cfg`` but for fewer rounds, with the most rounds."""
    if root is None:
        return None

    def unrounded(config: dict) -> str:
        return json.dumps({**config, "rounds": 0}, sort_keys=True, default=str)

    wanted, best = unrounded(cfg.to_dict()), None
    for final in root.glob(f"*/{FINAL}"):
        try:
            config = json.loads((final.parent / "meta.json").read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError):  # not a finished run's entry
            continue
        rounds = config["rounds"]
        if unrounded(config) == wanted and rounds < cfg.rounds and (best is None or rounds > best.rounds):
            shorter = cfg.replace(rounds=rounds)
            if shorter.key() == final.parent.name:  # the key holds the fedkit version too
                best = shorter
    return best


def _rounds_dependence(shorter: Config, cfg: Config) -> str | None:
    """What in ``cfg`` depends on its round count, so that its first ``shorter.rounds`` rounds would differ from
    ``shorter``'s run: the learning-rate schedule over those rounds, or an algorithm setting; None if nothing does."""
    mine, theirs = cfg.build_algorithm(), shorter.build_algorithm()
    shared = range(1, shorter.rounds + 1)
    if [mine.optimizer.lr_at(t) for t in shared] != [theirs.optimizer.lr_at(t) for t in shared]:
        return f"the round count sets its lr_schedule {cfg.lr_schedule!r}"
    mine, theirs = _own_settings(mine), _own_settings(theirs)
    changed = [name for name in mine if mine[name] != theirs[name]]
    changes = ", ".join(f"{name} {theirs[name]} → {mine[name]}" for name in changed)
    return f"the round count sets {cfg.algorithm}'s {changes}" if changed else None


def _own_settings(algorithm: Algorithm) -> dict:
    """An algorithm's attributes besides the run's settings and optimizer, a nested algorithm's included."""
    return {name: _own_settings(value) if isinstance(value, Algorithm) else value
            for name, value in vars(algorithm).items() if name not in ("run", "optimizer")}


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (it may still write its temporary file)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _set_aside(run_dir: Path, err: FedkitError) -> None:
    """Move an unreadable finished run aside (``fedkit cache clean`` removes it); the caller runs it again."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    names = (run_dir.with_name(f"{run_dir.name}.corrupt-{stamp}-{n}") for n in itertools.count())
    aside = next(name for name in names if not name.exists())
    os.replace(run_dir, aside)
    warnings.warn(f"{err}; moved the cached run aside to {aside}", stacklevel=3)


def clear_cache(cfg: Config, cache: str | Path | None = None) -> None:
    """Forget the cached result (and checkpoint) of ``cfg``."""
    shutil.rmtree(Path(cache or default_cache()) / cfg.key(), ignore_errors=True)

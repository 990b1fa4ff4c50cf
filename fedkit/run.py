"""run(config) -> History: sample, broadcast, train locally, aggregate, evaluate — every round.

Randomness comes from independent streams keyed by (seed, stream, round, client), so changing the algorithm
changes neither the partition nor the sampled clients nor the minibatches, and a resumed run continues
exactly where an uninterrupted one would.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .algorithms import make_algorithm
from .config import Config
from .data import load_dataset, make_partition
from .engine import ENGINES, FlatModel, RoundResult, evaluate, local_steps, make_plan
from .errors import ConfigError
from .history import History, replacing
from .models import build_model
from .optim import make_optimizer
from .threats import Threat, make_threat

PARTITION, SAMPLING, BATCHES, INIT, THREAT = range(1, 6)  # random stream ids


def rng(seed: int, stream: int, *keys: int) -> np.random.Generator:
    """An independent generator for one purpose (stream) and one (round, client) key."""
    return np.random.default_rng(np.random.SeedSequence([seed, stream, *keys]))


def partition_seed(cfg: Config) -> int:
    """The seed handed to the partitioner (its own stream, independent of the algorithm)."""
    return int(rng(cfg.seed, PARTITION).integers(2**31))


def chosen_threat(cfg: Config) -> Threat:
    """The config's threat with its clients picked from their own stream (independent of the algorithm)."""
    threat = make_threat(cfg.threat, **cfg.threat_args)
    threat.choose(cfg.num_clients, rng(cfg.seed, THREAT))
    return threat


def default_cache() -> Path:
    return Path(os.environ.get("FEDKIT_CACHE", Path.home() / ".cache" / "fedkit" / "runs"))


@dataclass
class RoundOutcome:
    w: torch.Tensor
    state: dict
    clients: np.ndarray  # sampled clients
    trained: np.ndarray  # which of them trained (False: a threat's client)
    plans: list  # one per client that trained
    message: dict
    uploads: dict  # of all sampled clients
    result: RoundResult  # of the clients that trained
    metrics: dict


class Federation:
    """The fixed parts of an experiment: data on the device, partition, model, algorithm and engine."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.device = _device(cfg.device)
        data = load_dataset(cfg.dataset, **cfg.dataset_args)
        self.task = data.task
        labels = data.y_train.numpy() if data.task == "classification" else np.zeros(len(data.y_train), int)
        extra = {"users": data.users} if cfg.partition == "natural" else {}
        self.parts = make_partition(cfg.partition, labels, cfg.num_clients, partition_seed(cfg),
                                    **extra, **cfg.partition_args)
        empty = [i for i, p in enumerate(self.parts) if len(p) == 0]
        if empty:
            raise ConfigError(f"partition {cfg.partition!r} left client(s) {empty[:10]} without data; "
                              f"lower num_clients={cfg.num_clients} or change partition_args")
        self.sizes = torch.tensor([len(p) for p in self.parts], device=self.device)
        self.x_train, self.y_train = data.x_train.to(self.device), data.y_train.to(self.device)
        self.x_test, self.y_test = data.x_test.to(self.device), data.y_test.to(self.device)

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(rng(cfg.seed, INIT).integers(2**31)))
            module = build_model(cfg.model, data.input_shape, data.num_classes, **cfg.model_args)
        self.fm = FlatModel(module.to(self.device))
        self.algorithm = make_algorithm(cfg.algorithm, **cfg.algorithm_args)
        self.algorithm.configure(num_clients=cfg.num_clients, lr=cfg.lr, server_lr=cfg.server_lr,
                                 local_steps=cfg.local_steps, rounds=cfg.rounds,
                                 layout=list(zip(self.fm.names, self.fm.shapes)))
        self.optimizer = make_optimizer(cfg.optimizer or self.algorithm.optimizer, **cfg.optimizer_args)
        self.engine = ENGINES[cfg.engine](self.fm, self.algorithm, self.optimizer, self.task,
                                          self.x_train, self.y_train)
        self.threat = chosen_threat(cfg)
        if self.threat.bad.sum() >= cfg.sampled_per_round():
            raise ConfigError(f"{int(self.threat.bad.sum())} {cfg.threat} but only {cfg.sampled_per_round()} "
                              "clients per round: a round could have no honest client")

    def sample(self, t: int, state) -> np.ndarray:
        """The clients of round t: a seeded draw without replacement among the eligible ones."""
        mask = self.algorithm.eligible(state)
        pool = np.arange(self.cfg.num_clients) if mask is None else np.flatnonzero(mask.cpu().numpy())
        count = min(self.cfg.sampled_per_round(), len(pool))
        return np.sort(rng(self.cfg.seed, SAMPLING, t).choice(pool, size=count, replace=False))

    def plans(self, t: int, clients: np.ndarray):
        c = self.cfg
        return [make_plan(int(i), self.parts[i], c.batch_size,
                          local_steps(len(self.parts[i]), c.batch_size, c.local_steps, c.local_epochs),
                          rng(c.seed, BATCHES, t, int(i))) for i in clients]

    def train_round(self, t: int, w: torch.Tensor, state: dict, w_prev: torch.Tensor) -> RoundOutcome:
        """Round t from global model w (w_prev: the one before): sample, send, train locally, aggregate."""
        alg = self.algorithm
        clients = self.sample(t, state)
        ids = torch.as_tensor(clients, device=self.device)
        message = alg.message(w, state, ids)
        recv = {**message, **alg.client_state(state, ids)}
        trains = self.threat.trains(clients)
        plans = self.plans(t, clients[trains])
        w0 = alg.start(w, state)
        result = self.engine.train(w0, {k: v[torch.as_tensor(trains)] for k, v in recv.items()}, plans, self.cfg.lr)
        uploads = self.threat.uploads(clients, result.uploads, w, w_prev)
        w_new, state, metrics = alg.aggregate(w, state, uploads, ids, self.sizes[ids])
        if result.buffers:
            honest = ids[torch.as_tensor(trains, device=self.device)]
            self.average_buffers(result.buffers, alg.weights(self.sizes[honest]))
        return RoundOutcome(w_new, state, clients, trains, plans, message, uploads, result, metrics)

    def average_buffers(self, stacked: dict[str, torch.Tensor], p: torch.Tensor) -> None:
        """Global BatchNorm statistics = the clients' statistics averaged with the aggregation weights."""
        for name, values in stacked.items():
            target = self.fm.buffers[name]
            if values.is_floating_point():
                target.copy_(torch.einsum("n,n...->...", p.to(values.dtype), values))
            else:  # num_batches_tracked
                target.copy_(values.max(0).values)

    def nobody_eligible(self, state) -> bool:
        """Whether the algorithm has excluded every client (e.g. TACO expelled them all): training must stop."""
        eligible = self.algorithm.eligible(state)
        return eligible is not None and not bool(eligible.any())

    def evaluate(self, w) -> tuple[float, float]:
        return evaluate(self.fm, w, self.x_test, self.y_test, self.task)

    def evaluate_all(self, w, state) -> dict[str, float]:
        """Test accuracy and loss of w, and of any other model the algorithm outputs (e.g. TACO's z_t)."""
        acc, loss = self.evaluate(w)
        scores = {"test_accuracy": acc, "test_loss": loss}
        for name, model in self.algorithm.outputs(w, state).items():
            scores[f"test_accuracy_{name}"], scores[f"test_loss_{name}"] = self.evaluate(model)
        return scores


def run(cfg: Config, *, cache: str | Path | bool | None = None, progress: bool = True,
        callbacks: tuple[Callable[[dict, torch.Tensor], None], ...] = ()) -> History:
    """Train ``cfg`` and return its History.

    ``cache``: a directory (default $FEDKIT_CACHE or ~/.cache/fedkit/runs), or False for none. A finished
    run with the same config hash is loaded instead of retrained; an unfinished one resumes from its
    checkpoint (written after every round). ``callbacks`` get each round's record after it is logged.
    """
    run_dir = None
    if cache is not False:
        run_dir = Path(default_cache() if cache in (None, True) else cache) / cfg.key()
        if (run_dir / "meta.json").exists():
            return History.load(run_dir)
    fed = Federation(cfg)
    w = fed.fm.flat()
    state, w_prev = fed.algorithm.init(w), w
    checkpoint = run_dir / "checkpoint.pt" if run_dir else None
    if checkpoint is not None and checkpoint.exists():
        saved = torch.load(checkpoint, map_location=fed.device, weights_only=False)
        w, w_prev, state = saved["w"], saved["w_prev"], saved["state"]
        round_rows, client_rows = saved["rounds"], saved["clients"]
        for name, value in saved["buffers"].items():
            fed.fm.buffers[name].copy_(value)
        start = saved["round"] + 1
    else:
        round_rows = [{"round": 0, **fed.evaluate_all(w, state), "diverged": False}]
        client_rows: list[dict] = []
        start = 1

    diverged = any(r["diverged"] for r in round_rows)
    bar = tqdm(range(start, cfg.rounds + 1), disable=not progress or diverged, desc=cfg.algorithm,
               initial=start - 1, total=cfg.rounds)
    stranded = fed.nobody_eligible(state)
    for t in bar:
        if diverged or stranded:
            break
        wall = time.perf_counter()
        rnd = fed.train_round(t, w, state, w_prev)
        w_prev, w, state, result = w, rnd.w, rnd.state, rnd.result
        diverged = not (bool(torch.isfinite(w).all()) and bool(torch.isfinite(result.train_loss).all()))
        stranded = fed.nobody_eligible(state)  # then this round is the last one trained
        evaluated = not diverged and (t % cfg.eval_every == 0 or t == cfg.rounds or stranded)
        scores = fed.evaluate_all(w, state) if evaluated else {"test_accuracy": np.nan, "test_loss": np.nan}
        diverged = diverged or (evaluated and not np.isfinite(scores["test_loss"]))
        client_rows += _client_rows(fed, t, rnd)
        record = {"round": t, **scores, "train_loss": float(result.train_loss.mean()),
                  "clients": len(rnd.clients), "client_seconds_max": max(result.seconds),
                  "client_seconds_sum": sum(result.seconds), "seconds": time.perf_counter() - wall,
                  "bytes_up": sum(r["bytes_up"] for r in client_rows[-len(rnd.clients):]),
                  "bytes_down": sum(r["bytes_down"] for r in client_rows[-len(rnd.clients):]),
                  "diverged": diverged}
        round_rows.append(record)
        if checkpoint is not None:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            with replacing(checkpoint) as path:
                torch.save({"round": t, "w": w, "w_prev": w_prev, "state": state, "buffers": fed.fm.buffers,
                            "rounds": round_rows, "clients": client_rows}, path)
        bar.set_postfix(acc=f"{scores['test_accuracy']:.4f}", loss=f"{record['train_loss']:.4f}")
        for callback in callbacks:
            callback(record, w)
        if cfg.stop_accuracy is not None and scores["test_accuracy"] >= cfg.stop_accuracy:
            break

    last = round_rows[-1]["round"]
    ended_early = (f"no eligible client left after round {last} (every client was expelled)"
                   if stranded and last < cfg.rounds else None)
    history = History(cfg.to_dict(), pd.DataFrame(round_rows), pd.DataFrame(client_rows), diverged, ended_early, w)
    if run_dir is not None:
        history.save(run_dir, fmt="parquet")
        checkpoint.unlink(missing_ok=True)
    return history


def _client_rows(fed: Federation, t: int, rnd: RoundOutcome) -> list[dict]:
    """One record per sampled client; a threat's clients that did not train have no steps, loss or time."""
    down = 4 * (rnd.w.numel() + sum(v[0].numel() for v in rnd.message.values()))
    up = 4 * sum(v[0].numel() for v in rnd.uploads.values())
    trained = iter(zip(rnd.plans, rnd.result.train_loss.tolist(), rnd.result.seconds))
    rows = []
    for j, i in enumerate(rnd.clients):
        plan, loss, seconds = next(trained) if rnd.trained[j] else (None, np.nan, 0.0)
        rows.append({"round": t, "client": int(i), "samples": int(fed.sizes[i]),
                     "steps": plan.steps if plan else 0, "train_loss": loss, "seconds": seconds,
                     "bytes_up": up, "bytes_down": down, "honest": bool(rnd.trained[j]),
                     **{k: float(v[j]) for k, v in rnd.metrics.items()}})
    return rows


def _device(name: str) -> torch.device:
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {name!r} requested but CUDA is not available on this machine")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("device 'mps' requested but MPS is not available on this machine")
    return torch.device(name)


def clear_cache(cfg: Config, cache: str | Path | None = None) -> None:
    """Forget the cached result (and checkpoint) of ``cfg``."""
    shutil.rmtree(Path(cache or default_cache()) / cfg.key(), ignore_errors=True)

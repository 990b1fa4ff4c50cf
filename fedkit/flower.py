"""Run a fedkit config on Flower (``pip install -e ".[flower]"``): the server side of every round (sampling, the
broadcast and message, threats, aggregation, evaluation, cache and checkpoints) is a Flower ``Strategy``
(``FedkitStrategy``) started in a ``ServerApp``; each client's local training runs in a Flower ``ClientApp`` on its
own SuperNode, with the algorithm's client hooks and the sequential engine. The algorithm files are not touched.

- The server sends a training client its model, the algorithm's message and its BatchNorm statistics as
  ``ArrayRecord``s, and the round, η_l and the config's fields as a ``ConfigRecord``; the client replies with its
  uploads.
- The client holds its own data (partition ``partition-id`` of the config's partition, the same seed), draws its own
  minibatches from the config's seeded stream for (round, client), and keeps its state (SCAFFOLD's c_i, FedDyn's
  gradient memory, FAdamGC's trackers, ...) in ``Context.state``, where Flower keeps client state.
- Bytes up and down are recorded as fedkit records them (the algorithm's uploads and message).

``run_flower(cfg)`` runs a config through Flower's simulation engine on this machine (one SuperNode per client) and
returns the same ``History`` as ``fedkit.run``. For ``flwr run`` (a simulation federation, or a SuperLink with real
SuperNodes: README, "Flower"), ``serverapp`` below reads the config from the run config's ``fedkit-config`` (a YAML
file of Config fields, as ``fedkit run --config`` takes, relative to the App's folder), sends it to ``clientapp``
with every round, and saves the History under ``fedkit-out`` (default ``runs``). A simulated federation needs one
SuperNode per client; the server refuses one with fewer.

``flwr run`` exits 0 even when the run fails (Ray's node not started in time under load, a client's error): ``python
-m fedkit.flower APP [flwr run options]`` runs ``flwr run APP --stream`` and then checks that the run saved its
History, exiting 1 with one line where it did not (examples/flower/README.md).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from logging import INFO
from pathlib import Path

import click
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.common import log
from flwr.common.config import get_fused_config_from_dir, get_project_dir, parse_config_args
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import Strategy
from flwr.simulation import run_simulation
from flwr.superlink.grid.inmemory_grid import InMemoryGrid

from .algorithms import ALGORITHMS, Algorithm
from .config import Config
from .configfile import load_config
from .engine import ClientInput, RoundResult
from .errors import ConfigError, FedkitError
from .federation import Federation, Sent
from .history import History
from .runner import Run, default_cache

Tensors = dict[str, torch.Tensor]


def run_flower(cfg: Config, *, cache=None, progress: bool = True, backend_config: dict | None = None) -> History:
    """Train ``cfg`` through Flower's simulation engine (``cache`` and ``progress`` as in ``fedkit.run``; the
    default cache is the ``flower`` folder of fedkit's, so that a run of the built-in engines is not taken for
    one on Flower; the default ``backend_config`` gives each client ``client_resources(cfg)``)."""
    refuse(cfg)
    run = Run(cfg, cache=_cache(cache), progress=progress)
    if run.active:
        failure: list[BaseException] = []
        run_simulation(server_app=server_app(run, failure), client_app=client_app(cfg),
                       num_supernodes=cfg.num_clients,
                       backend_config=backend_config or {"client_resources": client_resources(cfg)})
        if failure:
            raise failure[0]
        if run.active:
            raise FedkitError(f"the Flower run of {cfg.algorithm} stopped after round {run.state.t} of {cfg.rounds}")
    return run.finish()


def client_resources(cfg: Config) -> dict[str, float]:
    """The Ray resources of each client's worker: one CPU and, when ``cfg`` trains on CUDA, a share of one GPU small
    enough for one client per CPU core to share it (Ray hides every GPU from a worker that asks for none)."""
    share = 1 / (os.cpu_count() or 1) if torch.device(cfg.device).type == "cuda" else 0.0
    return {"num_cpus": 1, "num_gpus": round(share, 4)}  # Ray counts GPU shares to 0.0001


def server_app(run: Run | None = None, failure: list | None = None) -> ServerApp:
    """A ServerApp that trains ``run``'s remaining rounds with ``FedkitStrategy`` (None: the run of the run
    config's ``fedkit-config``, saved under ``fedkit-out``); an exception is appended to ``failure`` when given
    (Flower would only log it)."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        this = run or Run(_config(context, grid), cache=_cache(None))
        try:
            if this.active:  # not a finished run from the cache
                FedkitStrategy(this).start(grid, _record({"w": this.state.w}), this.cfg.rounds - this.state.t)
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            if failure is None:
                raise
            failure.append(err)
        if run is None:
            out = Path(str(context.run_config.get("fedkit-out", "runs"))).absolute()
            this.finish().save(out / f"{this.cfg.algorithm}-{this.cfg.key()}")
            log(INFO, "fedkit: history saved to %s", out / f"{this.cfg.algorithm}-{this.cfg.key()}")

    return app


class FedkitStrategy(Strategy):
    """A Flower strategy made of a fedkit run's server side: ``configure_train`` samples the round's clients and
    sends them the broadcast model, the algorithm's message and their BatchNorm statistics; ``aggregate_train``
    applies the threat and the algorithm's aggregation, evaluates and records the round (fedkit's History, cache
    and checkpoints). Evaluation is the server's own (``configure_evaluate`` sends nothing); rounds after the run
    has stopped (a target reached, divergence, no eligible client) send nothing."""

    def __init__(self, run: Run):
        refuse(run.cfg)  # a deployment reaches this without run_flower
        run.fed.engine_name = "flower"  # what the history's engine column says: the clients train on Flower
        run.bar.set_description(f"{run.cfg.algorithm} (flower)")
        self.run, self.nodes, self.sent = run, None, None
        self.fields = json.dumps(run.cfg.to_dict())  # the config, sent to the clients with every round

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
                        ) -> list[Message]:
        if not self.run.active:
            return []
        self.nodes = self.nodes or _partition_nodes(grid, self.run.cfg.num_clients)
        self.sent = sent = self.run.fed.send(self.run.state)
        c = sent.inputs
        return [Message(RecordDict({"model": _record({"w": c.w0[j]}),
                                    "message": _record({k: v[j] for k, v in c.recv.items()}),
                                    "buffers": _record({k: v[j] for k, v in sent.buffers.items()}),
                                    "config": ConfigRecord({"t": c.t, "lr": c.lr, "fedkit": self.fields})}),
                        message_type="train", dst_node_id=self.nodes[i], group_id=str(c.t))
                for j, i in enumerate(sent.trained_ids.tolist())]

    def aggregate_train(self, server_round: int, replies: Iterable[Message]
                        ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        if self.sent is None:
            return None, None
        sent, self.sent = self.sent, None
        result = _result(sent, replies, self.nodes)
        self.run.record(self.run.fed.receive(sent, result))
        return _record({"w": self.run.state.w}), MetricRecord({"train_loss": self.run.round_rows[-1]["train_loss"]})

    def configure_evaluate(self, server_round, arrays, config, grid) -> list[Message]:
        return []

    def aggregate_evaluate(self, server_round, replies) -> MetricRecord | None:
        return None

    def summary(self) -> None:
        cfg = self.run.cfg
        log(INFO, "fedkit %s on %s: %d clients, %d rounds", cfg.algorithm, cfg.dataset, cfg.num_clients, cfg.rounds)


def client_app(cfg: Config | None = None) -> ClientApp:
    """A ClientApp for ``cfg`` (None: the config the server sends with each round): SuperNode ``partition-id`` = i
    trains as client i."""
    app = ClientApp()
    built: dict[str, _Client] = {}  # per process: the client side of a config (data, partition, model)

    @app.query()
    def partition(msg: Message, context: Context) -> Message:
        return Message(RecordDict({"node": MetricRecord({"partition": _partition_id(context)})}), reply_to=msg)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        config = cfg or Config.from_dict(json.loads(str(msg.content["config"]["fedkit"])))
        client = built.get(config.key()) or built.setdefault(config.key(), _Client(config))
        return Message(client.train(msg.content, context, _partition_id(context)), reply_to=msg)

    return app


class _Client:
    """The client side of a config: its Federation (data, partition, model and algorithm from the same seed) and a
    sequential engine."""

    def __init__(self, cfg: Config):
        self.fed = fed = Federation(cfg.replace(engine="sequential", compile=False))
        self.engine = fed.engine
        self.initial = fed.algorithm.client_init(fed.fm.flat())

    def train(self, content: RecordDict, context: Context, i: int) -> RecordDict:
        config = content["config"]
        t, lr = int(config["t"]), float(config["lr"])
        device = self.fed.device
        w0 = _tensors(content["model"], device)["w"]
        kept = _tensors(context.state["kept"], device) if "kept" in context.state else self.initial
        plan = self.fed.plans(t, [i])[0]  # the minibatches of client i in round t, from their own stream
        inputs = ClientInput(w0[None], _stacked(_tensors(content["message"], device)), _stacked(kept),
                             torch.tensor([float(plan.steps)], device=device), lr, t)
        result = self.engine.train(inputs, [plan], _stacked(_tensors(content["buffers"], device)))
        if result.kept:
            context.state["kept"] = ArrayRecord({k: v[0] for k, v in result.kept.items()})
        return RecordDict({"uploads": _record({k: v[0] for k, v in result.uploads.items()}),
                           "buffers": _record({k: v[0] for k, v in result.buffers.items()}),
                           "metrics": MetricRecord({"train_loss": float(result.train_loss[0]),
                                                    "seconds": result.seconds[0]})})


def _result(sent: Sent, replies: Iterable[Message], nodes: dict[int, int]) -> RoundResult:
    """The training clients' replies stacked as the engines stack their results."""
    c, ids = sent.inputs, sent.trained_ids.tolist()
    by_node = {r.metadata.src_node_id: r for r in replies}
    rows = []
    for i in ids:
        reply = by_node.get(nodes[i])
        if reply is None or reply.has_error():
            reason = "no reply" if reply is None else reply.error.reason
            raise FedkitError(f"client {i} failed in round {c.t} on Flower: {reason}")
        rows.append(reply.content)
    if not rows:
        return RoundResult({}, {}, torch.zeros(0), [])
    device = c.w0.device
    stack = lambda name: {k: torch.stack([_tensors(r[name], device)[k] for r in rows])  # noqa: E731
                          for k in _tensors(rows[0][name], device)}
    return RoundResult(stack("uploads"), c.kept,  # kept stays on the clients: the server's copy is not used
                       torch.tensor([r["metrics"]["train_loss"] for r in rows], device=device),
                       [float(r["metrics"]["seconds"]) for r in rows], stack("buffers"))


def _partition_nodes(grid: Grid, count: int, timeout: float = 300.0, settle: float = 2.0) -> dict[int, int]:
    """{partition id: node id} of the ``count`` SuperNodes, once they have all connected. A simulation registers
    all its SuperNodes at once: one with fewer is refused once their number has not changed for ``settle`` seconds
    (a deployment's SuperNodes may connect later: it waits up to ``timeout``)."""
    start = changed = time.monotonic()
    seen = 0
    while len(nodes := list(grid.get_node_ids())) < count:
        now = time.monotonic()
        if len(nodes) != seen:
            seen, changed = len(nodes), now
        if isinstance(grid, InMemoryGrid) and nodes and now - changed > settle:
            raise FedkitError(f"the simulated federation has {len(nodes)} SuperNodes, but the config's "
                              f"num_clients={count} needs one per client: flwr run . --federation-config "
                              f"'num-supernodes={count}' (README, \"Flower\")")
        if now - start > timeout:
            raise FedkitError(f"only {len(nodes)} of {count} SuperNodes connected within {timeout:.0f} s")
        time.sleep(0.05)
    asks = [Message(RecordDict(), message_type="query", dst_node_id=n) for n in nodes]
    found = {int(r.content["node"]["partition"]): r.metadata.src_node_id for r in grid.send_and_receive(asks)}
    if sorted(found) != list(range(count)):
        raise FedkitError(f"the SuperNodes hold partitions {sorted(found)}, not 0..{count - 1}")
    return found


def _cache(cache):
    return default_cache() / "flower" if cache in (None, True) else cache


def _config(context: Context, grid: Grid) -> Config:
    """The Config named by the run config's ``fedkit-config`` (a YAML file of Config fields; a relative path is
    read from the Flower App's folder, where ``flwr run`` installed it)."""
    path = context.run_config.get("fedkit-config")
    if not path:
        raise ConfigError("the Flower run config has no 'fedkit-config' (the path of a fedkit YAML config)")
    run = grid.run
    if run.fab_id.count("/") == 1:
        path = get_project_dir(run.fab_id, run.fab_version, run.fab_hash) / str(path)
    return load_config(path)


def _partition_id(context: Context) -> int:
    return int(context.node_config["partition-id"])


def refuse(cfg: Config) -> None:
    """What the Flower backend cannot run, named: the clients train one at a time on the sequential engine, and
    keep their state (so the server cannot evaluate each client's own model)."""
    if cfg.compile or cfg.engine == "vectorized":
        option = "compile=True" if cfg.compile else "engine 'vectorized'"
        raise ConfigError(f"the Flower backend does not support {option}: its clients train one at a time on the "
                          "sequential engine; leave engine 'auto' and compile false")
    if ALGORITHMS[cfg.algorithm].client_models is not Algorithm.client_models:
        raise ConfigError(f"algorithm {cfg.algorithm!r} evaluates each client's own model on the server, "
                          "which the Flower backend cannot yet (the clients keep their state)")


def _record(tensors: Tensors) -> ArrayRecord:
    return ArrayRecord({k: v.detach().cpu().contiguous() for k, v in tensors.items()})


def _tensors(record: ArrayRecord, device: torch.device) -> Tensors:
    return {k: v.to(device) for k, v in record.to_torch_state_dict().items()} if len(record) else {}


def _stacked(tensors: Tensors) -> Tensors:
    return {k: v[None] for k, v in tensors.items()}


def history_folder(app: Path, run_config: list[str]) -> Path:
    """Where the ServerApp of the Flower App in ``app`` saves its History, given ``flwr run``'s ``--run-config``
    values: ``<algorithm>-<config key>`` of its ``fedkit-config``, under its ``fedkit-out`` (relative: to ``app``)."""
    try:
        settings = get_fused_config_from_dir(app, parse_config_args(run_config))
        name, out = settings["fedkit-config"], Path(str(settings.get("fedkit-out", "runs")))
    except (OSError, ValueError, KeyError, click.ClickException) as err:
        message = err.format_message() if isinstance(err, click.ClickException) else str(err)
        raise FedkitError(f"{app} is not the folder of a Flower App with a fedkit-config: "
                          f"{' '.join(message.split())}") from None
    cfg = load_config(app / str(name))
    return (app / out).absolute() / f"{cfg.algorithm}-{cfg.key()}"


def saved_since(folder: Path, before: tuple | None) -> History:
    """The History in ``folder``, saved after ``_stamp`` read ``before``; FedkitError if the run saved none."""
    if _stamp(folder) in (None, before):
        raise FedkitError(f"the Flower run saved no history in {folder}: it failed before its server finished (flwr "
                          "run exits 0 all the same); its log above says why, e.g. Ray's node did not start in time")
    return History.load(folder)


def _stamp(folder: Path) -> tuple | None:
    """The identity of ``folder``'s meta.json, which History.save replaces last; None if there is none."""
    meta = folder / "meta.json"
    return (meta.stat().st_ino, meta.stat().st_mtime_ns) if meta.is_file() else None


def main(argv: list[str] | None = None) -> int:
    """``python -m fedkit.flower APP [flwr run options]``: ``flwr run APP --stream`` with the History saved under an
    absolute ``fedkit-out``, then 0 and where it is if the run saved it, else 1 and one line saying so."""
    parser = argparse.ArgumentParser(prog="python -m fedkit.flower", description=main.__doc__)
    parser.add_argument("app", type=Path, help="the Flower App's folder (e.g. examples/flower)")
    parser.add_argument("--run-config", action="append", default=[], help="as flwr run's")
    args, flwr_options = parser.parse_known_args(argv)
    try:
        folder = history_folder(args.app, args.run_config)
        flwr = shutil.which("flwr")
        if flwr is None:
            raise FedkitError("the flwr command is not on PATH: pip install 'fedkit-torch[flower]'")
        before = _stamp(folder)
        run_config = [option for value in args.run_config for option in ("--run-config", value)]
        done = subprocess.run([flwr, "run", str(args.app), *flwr_options, "--stream", *run_config,
                               "--run-config", f"fedkit-out='{folder.parent}'"])
        if done.returncode:
            return done.returncode  # flwr said why
        history = saved_since(folder, before)
    except FedkitError as err:
        print(f"fedkit: error: {err}", file=sys.stderr)
        return 1
    print(f"fedkit: the Flower run saved its history in {folder} (last round {int(history.rounds['round'].iloc[-1])}, "
          f"final test accuracy {history.final_accuracy:.4f})")
    return 0


# for flwr run: both read the run config's fedkit-config
serverapp = server_app()
clientapp = client_app()

if __name__ == "__main__":
    sys.exit(main())

"""A federation: the fixed parts of an experiment, and ``rounds()``, the one round loop every consumer iterates.

Each round: sample → (server step on root data) → send → local training → threat → aggregate. Randomness comes
from independent streams keyed by (seed, stream, round, client), so changing the algorithm changes neither the
partition nor the sampled clients nor the minibatches, and a resumed run continues exactly where an
uninterrupted one would.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from .algorithms import Algorithm, RoundInfo
from .config import Config
from .data import FedData, load_dataset, make_partition
from .engine import ENGINES, ClientInput, FlatModel, RoundResult, choose_engine, evaluate, local_steps, make_plan
from .errors import ConfigError
from .models import build_model
from .threats import Threat, make_threat

PARTITION, SAMPLING, BATCHES, INIT, THREAT, ROOT = range(1, 7)  # random stream ids


def rng(seed: int, stream: int, *keys: int) -> np.random.Generator:
    """An independent generator for one purpose (stream) and one (round, client) key."""
    return np.random.default_rng(np.random.SeedSequence([seed, stream, *keys]))


def partition_seed(cfg: Config) -> int:
    """The seed handed to the partitioner (its own stream, independent of the algorithm)."""
    return int(rng(cfg.seed, PARTITION).integers(2**31))


def config_partition(cfg: Config, data: FedData | None = None) -> list[np.ndarray]:
    """The clients' training-sample indices of ``cfg``, exactly as its Federation splits them (``data``: the loaded
    data set, else loaded here)."""
    data = data if data is not None else load_dataset(cfg.dataset, **cfg.dataset_args)
    labels = data.y_train.numpy() if data.task == "classification" else np.zeros(len(data.y_train), int)
    extra = {"users": data.users} if cfg.partition == "natural" else {}
    return make_partition(cfg.partition, labels, cfg.num_clients, partition_seed(cfg), **extra, **cfg.partition_args)


def chosen_threat(cfg: Config) -> Threat:
    """The config's threat with its clients picked from their own stream (independent of the algorithm)."""
    threat = make_threat(cfg.threat, **cfg.threat_args)
    threat.choose(cfg.num_clients, rng(cfg.seed, THREAT))
    return threat


@dataclass
class FedState:
    """Everything that changes from round to round: the state after round t (a checkpoint holds exactly this)."""

    t: int
    w: torch.Tensor  # global model x_t
    w_prev: torch.Tensor  # x_{t−1}
    server: dict  # the algorithm's server state
    kept: dict  # what every client keeps between its rounds, tables [num_clients, ...]
    buffers: dict  # global BatchNorm statistics (or per-client tables [num_clients, ...] when kept local)


@dataclass
class Round:
    """What happened in round t."""

    info: RoundInfo
    trained: np.ndarray  # which sampled clients trained (False: a threat's client)
    plans: list  # one per client that trained
    message: dict  # what the server sent besides the model, [n, ...]
    uploads: dict  # of all sampled clients, [n, ...]
    result: RoundResult  # of the clients that trained
    metrics: dict  # the algorithm's per-client metrics, [n]
    after: FedState  # the state after the round
    stranded: bool  # the algorithm has excluded every client: no round can follow

    @property
    def clients(self) -> np.ndarray:
        return self.info.clients.cpu().numpy()


@dataclass
class Sent:
    """A round up to local training: what the server sent and what the clients train on."""

    before: FedState
    info: RoundInfo
    clients: np.ndarray  # the sampled clients
    trains: np.ndarray  # which of them train
    trained_ids: torch.Tensor  # their ids
    plans: list  # one per client that trains
    message: dict  # the server's message to every sampled client, [n, ...]
    inputs: ClientInput  # the training clients' inputs, stacked
    buffers: dict  # their BatchNorm statistics, stacked


class Federation:
    """Data on the device, partition, model, algorithm, threat and engine of one config."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.device = _device(cfg.device)
        data = load_dataset(cfg.dataset, **cfg.dataset_args)
        self.task = data.task
        self.parts = config_partition(cfg, data)
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
        self.algorithm = cfg.build_algorithm(self.fm.layout)
        self.engine_name = choose_engine(cfg.engine, self.fm, self.device)
        if cfg.compile and self.engine_name != "vectorized":
            raise ConfigError(f"compile=True needs the vectorized engine, but engine 'auto' picked "
                              f"'{self.engine_name}' for model {cfg.model!r} on {cfg.device}; set engine='vectorized'")
        self.engine = ENGINES[self.engine_name](self.fm, self.algorithm, self.task, self.x_train, self.y_train,
                                                cfg.compile)
        self.threat = chosen_threat(cfg)
        if self.threat.bad.sum() >= cfg.sampled_per_round():
            raise ConfigError(f"{int(self.threat.bad.sum())} {cfg.threat} but only {cfg.sampled_per_round()} "
                              "clients per round: a round could have no honest client")
        root = self.algorithm.root_samples
        if root:  # the server's own data: a uniform sample of the training set, trained on by plain local SGD
            if root > len(self.y_train):
                raise ConfigError(f"root_samples={root} exceeds the {len(self.y_train)} training samples")
            self.root = np.sort(rng(cfg.seed, ROOT).choice(len(self.y_train), size=root, replace=False))
            plain = Algorithm(self.algorithm.run)
            self.root_engine = ENGINES["sequential"](self.fm, plain, self.task, self.x_train, self.y_train)

    # ---- the state before round 1, and the round loop
    def initial(self) -> FedState:
        w = self.fm.flat()
        alg, n = self.algorithm, self.cfg.num_clients
        kept = {k: v.expand(n, *v.shape).clone() for k, v in alg.client_init(w).items()}
        buffers = {k: v.clone() for k, v in self.fm.buffers.items()}
        if alg.buffers == "local":
            buffers = {k: v.expand(n, *v.shape).clone() for k, v in buffers.items()}
        return FedState(0, w, w, alg.init(w, self.fm.layout), kept, buffers)

    def rounds(self, s: FedState | None = None, trace: bool = False) -> Iterator[Round]:
        """Rounds s.t + 1, ..., T from state s (default: the initial one); stops early once nobody is eligible.
        ``trace`` records every client's local iterates (``round.result.paths``; sequential engine)."""
        s = s or self.initial()
        while self.continues(s):
            rnd = self.round(s, trace)
            s = rnd.after
            yield rnd

    def continues(self, s: FedState) -> bool:
        """Whether a round follows state s."""
        return s.t < self.cfg.rounds and not self.nobody_eligible(s.server)

    def round(self, s: FedState, trace: bool = False) -> Round:
        """Round s.t + 1 from state s: sample, send, train locally, aggregate."""
        sent = self.send(s)
        return self.receive(sent, self.engine.train(sent.inputs, sent.plans, sent.buffers, trace))

    def send(self, s: FedState) -> Sent:
        """Round s.t + 1 up to local training: sample, plan the minibatches, the server's message and root step."""
        alg, t = self.algorithm, s.t + 1
        clients = self.sample(t, s.server)
        ids = torch.as_tensor(clients, device=self.device)
        trains = self.threat.trains(clients)
        plans = self.plans(t, clients[trains])
        steps = torch.zeros(len(clients), device=self.device)
        steps[torch.as_tensor(trains, device=self.device)] = torch.tensor([float(p.steps) for p in plans],
                                                                         device=self.device)
        info = RoundInfo(t, ids, self.sizes[ids], steps, alg.optimizer.lr_at(t))
        sent = alg.broadcast(s.w, s.server)
        if alg.root_samples:
            info.root_delta = self.root_update(t, sent, info.lr, s.buffers)
        message = alg.message(s.w, s.server, info)
        honest = torch.as_tensor(trains, device=self.device)
        trained_ids = ids[honest]
        c = ClientInput(sent.expand(len(plans), -1), {k: v[honest] for k, v in message.items()},
                        {k: v[trained_ids] for k, v in s.kept.items()}, steps[honest], info.lr, t)
        return Sent(s, info, clients, trains, trained_ids, plans, message, c,
                    self._client_buffers(s.buffers, trained_ids, len(plans)))

    def receive(self, sent: Sent, result: RoundResult) -> Round:
        """The rest of the round once the clients have trained: threat, aggregation, the state after it."""
        s, alg, trained_ids = sent.before, self.algorithm, sent.trained_ids
        honest_uploads = result.uploads or {"delta": s.w.new_zeros(0, s.w.numel())}  # a sample of threats only
        uploads = self.threat.uploads(sent.clients, honest_uploads, s.w, s.w_prev, sent.info.t)
        w_new, server, metrics = alg.aggregate(s.w, s.server, uploads, sent.info)
        metrics = {**self.threat.metrics(sent.clients, sent.info.t), **metrics}
        kept = ({k: v.index_copy(0, trained_ids, result.kept[k]) for k, v in s.kept.items()} if sent.plans
                else s.kept)
        buffers = self._new_buffers(s.buffers, result.buffers, trained_ids)
        after = FedState(sent.info.t, w_new, s.w, server, kept, buffers)
        return Round(sent.info, sent.trains, sent.plans, sent.message, uploads, result, metrics, after,
                     self.nobody_eligible(server))

    def sample(self, t: int, server: dict | None) -> np.ndarray:
        """The clients of round t: a seeded draw without replacement among the eligible ones."""
        mask = self.algorithm.eligible(server) if server is not None else None
        pool = np.arange(self.cfg.num_clients) if mask is None else np.flatnonzero(mask.cpu().numpy())
        count = min(self.cfg.sampled_per_round(), len(pool))
        return np.sort(rng(self.cfg.seed, SAMPLING, t).choice(pool, size=count, replace=False))

    def plans(self, t: int, clients: np.ndarray):
        c = self.cfg
        return [make_plan(int(i), self.parts[i], c.batch_size,
                          local_steps(len(self.parts[i]), c.batch_size, c.local_steps, c.local_epochs),
                          rng(c.seed, BATCHES, t, int(i))) for i in clients]

    def root_update(self, t: int, w: torch.Tensor, lr: float, buffers: dict) -> torch.Tensor:
        """The server's update on its root data from w: the clients' plain local procedure (same K or epochs,
        batch, optimizer and η_l), a minibatch plan from its own stream."""
        cfg = self.cfg
        plan = make_plan(-1, self.root, cfg.batch_size,
                         local_steps(len(self.root), cfg.batch_size, cfg.local_steps, cfg.local_epochs),
                         rng(cfg.seed, ROOT, t))
        c = ClientInput(w[None], {}, {}, torch.tensor([float(plan.steps)], device=w.device), lr, t)
        global_buffers = buffers if self.algorithm.buffers == "average" else {}
        return self.root_engine.train(c, [plan], {k: v[None] for k, v in global_buffers.items()}).uploads["delta"][0]

    # ---- BatchNorm statistics: averaged like the model, or kept by each client
    def _client_buffers(self, buffers: dict, ids: torch.Tensor, n: int) -> dict:
        if self.algorithm.buffers == "local":
            return {k: v[ids] for k, v in buffers.items()}
        return {k: v.expand(n, *v.shape) for k, v in buffers.items()}

    def _new_buffers(self, buffers: dict, trained: dict, ids: torch.Tensor) -> dict:
        if not trained:
            return buffers
        if self.algorithm.buffers == "local":
            return {k: v.index_copy(0, ids, trained[k]) for k, v in buffers.items()}
        p = self.algorithm.weights(self.sizes[ids])
        return {k: torch.einsum("n,n...->...", p.to(v.dtype), v) if v.is_floating_point() else v.max(0).values
                for k, v in trained.items()}  # num_batches_tracked: the largest count

    # ---- evaluation
    def nobody_eligible(self, server: dict) -> bool:
        """Whether the algorithm has excluded every honest client (e.g. TACO expelled them all, or all but a
        threat's clients, who do not train): training must stop."""
        eligible = self.algorithm.eligible(server)
        return eligible is not None and not bool((eligible.cpu().numpy() & ~self.threat.bad).any())

    def evaluate(self, w: torch.Tensor, buffers: dict | None = None) -> tuple[float, float]:
        """(accuracy, loss) of w on the test set, with the global BatchNorm statistics ``buffers``."""
        if buffers is not None and self.algorithm.buffers == "local":
            buffers = None  # no global statistics exist: the model's initial ones
        return evaluate(self.fm, w, self.x_test, self.y_test, self.task, buffers)

    def evaluate_all(self, s: FedState) -> dict[str, float]:
        """Test accuracy and loss of x_t, and of any other model the algorithm outputs (e.g. TACO's z_t)."""
        acc, loss = self.evaluate(s.w, s.buffers)
        scores = {"test_accuracy": acc, "test_loss": loss}
        for name, model in self.algorithm.outputs(s.w, s.server).items():
            scores[f"test_accuracy_{name}"], scores[f"test_loss_{name}"] = self.evaluate(model, s.buffers)
        models = self.algorithm.client_models(s.w, s.kept)
        if models is not None:  # the mean over the clients' own models (and their own BatchNorm statistics)
            local = self.algorithm.buffers == "local"
            each = [evaluate(self.fm, m, self.x_test, self.y_test, self.task,
                             {k: v[i] for k, v in s.buffers.items()} if local else s.buffers)
                    for i, m in enumerate(models)]
            scores["test_accuracy_clients"], scores["test_loss_clients"] = np.mean(each, axis=0).tolist()
        return scores


def _device(name: str) -> torch.device:
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {name!r} requested but CUDA is not available on this machine")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("device 'mps' requested but MPS is not available on this machine")
    return torch.device(name)

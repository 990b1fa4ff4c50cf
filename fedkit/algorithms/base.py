"""The algorithm interface: an FL method is a handful of hooks over flat parameter tensors.

An algorithm is built once per run with the run's ``Settings`` (clients, K or epochs, T, the client optimizer
that owns η_l and its schedule) and its own hyper-parameters, whose annotations the registry checks.
Server hooks see stacks of the sampled clients' tensors ([n, ...]) and a ``RoundInfo``; client hooks are written
for ONE client (``ClientInput`` c: the model received, the message, what the client kept, K_i, η_l, t) and are
``vmap``ped by the vectorized engine, so they must be pure tensor code without data-dependent Python branching.
The base class is FedAvg (McMahan et al. 2017).

Corrections under a stateful client optimizer. A method that adds a correction term h to the client step
(``correction_term``: SCAFFOLD's α(c − c_i), FedPVR's, TACO's γ(1 − α_i)Δ_t) names where h enters with
``correction_at``:
  "in_optimizer"  the optimizer steps along g + h:              w ← opt(w, g + h)
  "after_step"    the optimizer steps along g, then h is added:  w ← opt(w, g) − η_l h   (NIID-Bench's SCAFFOLD)
With a stateless optimizer (SGD without momentum, weight decay allowed) both are the same update, w − η_l(g + h),
and run as one fused step: the papers' plain-SGD algorithm, bit for bit. With momentum or Adam they differ; the
README's section "Corrections under momentum and Adam" gives the equations and why "after_step" is the default.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch

from ..engine.program import Batch, ClientInput, GradAt, LocalData
from ..layout import Layout
from ..optim import SGD, Optimizer

Tensors = dict[str, torch.Tensor]
CorrectionAt = Literal["in_optimizer", "after_step"]


@dataclass(frozen=True)
class Settings:
    """The run's settings an algorithm is built with (``Config.settings()``)."""

    num_clients: int = 1
    clients_per_round: int = 1
    rounds: int = 1
    local_steps: int | None = 1  # K; None for an epoch budget
    local_epochs: int | None = None
    batch_size: int = 1
    server_lr: float = 1.0  # η_g in delta units
    optimizer: Optimizer = field(default_factory=SGD)  # the client optimizer: η_l, its schedule, its rule
    layout: Layout | None = None  # the model's tensors; set when a Federation builds the algorithm (None in checks)
    seed: int = 0  # the run's seed, for an algorithm's own random choices (FAdamGC's tracking subset)


@dataclass
class RoundInfo:
    """What the server knows of round t when it sends, and when it aggregates."""

    t: int
    clients: torch.Tensor  # ids [n] of the sampled clients
    sizes: torch.Tensor  # their data sizes n_i [n]
    steps: torch.Tensor  # their local steps K_i [n] (0 for a client that does not train)
    lr: float  # the round's local learning rate η_l
    root_delta: torch.Tensor | None = None  # the server's own update on its root data (``root_samples`` > 0)


class Algorithm:
    name = "fedavg"
    default_optimizer = "sgd"  # the client optimizer a config gets when it names none
    buffers: Literal["average", "local"] = "average"  # BatchNorm statistics: averaged like Δ_i, or kept per client
    needs_features = False  # whether ``objective`` reads ``batch.features``
    root_samples = 0  # > 0: the server trains on this many root samples each round (``RoundInfo.root_delta``)
    epoch_start = None  # a method (w, local, c, data) -> local, run before each local epoch (FedDUAL's β)
    correction_at: CorrectionAt = "in_optimizer"  # where ``correction_term`` enters a stateful optimizer's step

    def __init__(self, run: Settings, weighting: Literal["data", "uniform"] = "data"):
        self.run, self.weighting = run, weighting
        self.optimizer = run.optimizer

    @classmethod
    def optimizer_for(cls, hyper: dict) -> str:
        """The client optimizer of a config that names none, given the algorithm's hyper-parameters."""
        return cls.default_optimizer

    # ---- server: state, and what each sampled client receives
    def init(self, w0: torch.Tensor, layout: Layout) -> Tensors:
        """Server state; ``layout`` names the tensors of the flat vector (for selections, ``Layout.mask``)."""
        return {}

    def client_init(self, w0: torch.Tensor) -> Tensors:
        """What one client holds before its first round (its kept state: control variates, moments, ...)."""
        return {}

    def broadcast(self, w: torch.Tensor, state: Tensors) -> torch.Tensor:
        """The model the sampled clients receive (c.w0); default w, FedACG: the look-ahead x_t + λ m_t."""
        return w

    def message(self, w: torch.Tensor, state: Tensors, rnd: RoundInfo) -> Tensors:
        """Tensors sent to the sampled clients besides the model, stacked [n, ...]; counted as bytes down."""
        return {}

    def eligible(self, state: Tensors) -> torch.Tensor | None:
        """Boolean mask [num_clients] of clients that may be sampled (None = all)."""
        return None

    def client_models(self, w: torch.Tensor, kept: Tensors) -> torch.Tensor | None:
        """Every client's own model [num_clients, d] for a personalised method (FedBN), evaluated on the test set
        with its own BatchNorm statistics; None: the clients hold no models of their own."""
        return None

    def outputs(self, w: torch.Tensor, state: Tensors) -> Tensors:
        """Models besides w that the method reports (evaluated and logged as test_accuracy_<name>)."""
        return {}

    # ---- one client (vmapped by the vectorized engine)
    def objective(self, data: torch.Tensor, w: torch.Tensor, c: ClientInput, batch: Batch) -> torch.Tensor:
        """The local loss at w from the minibatch's data loss (FedProx adds (μ/2)‖w − x_t‖²)."""
        return data

    def correction_term(self, w: torch.Tensor, c: ClientInput) -> torch.Tensor | None:
        """The correction h added to the client's gradient step (None: the method adds none); placed by
        ``correction_at``."""
        return None

    def direction(self, g: torch.Tensor, w: torch.Tensor, c: ClientInput) -> torch.Tensor:
        """The step direction handed to the client optimizer, from the stochastic gradient g: g + h."""
        h = self.correction_term(w, c)
        return g if h is None else g + h

    def local_init(self, c: ClientInput) -> tuple[torch.Tensor, Tensors]:
        """The first local iterate (default: the model received) and the within-round state."""
        return c.w0, self.optimizer.init(c.w0)

    def local_step(self, w, local: Tensors, c: ClientInput, grad_at: GradAt):
        """One optimizer step along ``direction``, or, ``correction_at="after_step"`` with a stateful optimizer, one
        along g followed by − η_l h. Returns (new w, new local state, data loss)."""
        g, loss = grad_at(w)
        h = self.correction_term(w, c) if self.correction_at == "after_step" and self.optimizer.stateful else None
        if h is None:
            w, local = self.optimizer.step(w, self.direction(g, w, c), local, c.lr)
            return w, local, loss
        w, local = self.optimizer.step(w, g, local, c.lr)
        return w - c.lr * h, local, loss

    def upload(self, w, local: Tensors, c: ClientInput) -> Tensors:
        """What the client sends back; 'delta' = y_i − x_t is the model update."""
        return {"delta": w - c.w0}

    def keep(self, w, local: Tensors, c: ClientInput) -> Tensors:
        """What the client keeps for its next round (default: what it had)."""
        return c.kept

    def local_final(self, w, local: Tensors, c: ClientInput, data: LocalData) -> tuple[Tensors, Tensors]:
        """(upload, keep); ``data`` evaluates the client's whole training set (FedDUAL's full-data gradient)."""
        return self.upload(w, local, c), self.keep(w, local, c)

    # ---- server: aggregation and global step
    def weights(self, sizes: torch.Tensor) -> torch.Tensor:
        """Aggregation weights p_i over the sampled clients (sum to 1)."""
        if self.weighting == "uniform":
            return torch.full_like(sizes, 1.0 / len(sizes), dtype=torch.float32)
        sizes = sizes.float()
        return sizes / sizes.sum()

    def aggregate(self, w, state: Tensors, ups: Tensors, rnd: RoundInfo) -> tuple[torch.Tensor, Tensors, Tensors]:
        """New global model, new state, and per-client metrics ([n] tensors) to log."""
        return w + self.run.server_lr * (self.weights(rnd.sizes) @ ups["delta"]), state, {}

    def bytes_up(self, ups: Tensors) -> torch.Tensor:
        """Bytes each client uploads [n] (default: every entry of its upload)."""
        return sum(v.reshape(len(v), -1).shape[1] * v.element_size() * torch.ones(len(v)) for v in ups.values())

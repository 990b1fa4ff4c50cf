"""The algorithm interface: an FL method is a handful of hooks over flat parameter tensors.

Server-side hooks see stacks of the sampled clients' tensors ([n, ...]); client-side hooks (``objective``,
``direction``, ``upload``) are written for ONE client, and the vectorized engine ``vmap``s them over the
stack, so they must be pure tensor code without data-dependent Python branching.
The base class is FedAvg (McMahan et al. 2017).
"""
from __future__ import annotations

import torch

from ..errors import ConfigError

Tensors = dict[str, torch.Tensor]


class Algorithm:
    name = "fedavg"
    optimizer = "sgd"  # the client optimizer a config gets when it names none

    def __init__(self, weighting: str = "data"):
        if weighting not in ("data", "uniform"):
            raise ConfigError(f"{self.name}: weighting must be 'data' or 'uniform', got {weighting!r}")
        self.weighting = weighting

    def configure(self, *, num_clients: int, lr: float, server_lr: float, local_steps: int | None = None,
                  rounds: int | None = None, layout: list[tuple[str, torch.Size]] | None = None) -> None:
        """Called once by ``run`` with the experiment settings the hooks need: local_steps is None for an
        epoch budget; ``layout`` lists the (name, shape) of the parameter tensors in flat-vector order."""
        self.num_clients, self.lr, self.server_lr = num_clients, lr, server_lr
        self.local_steps, self.rounds, self.layout = local_steps, rounds, layout

    # ---- server: state, and what each sampled client receives
    def init(self, w0: torch.Tensor) -> Tensors:
        """Server state (may hold per-client tables of shape [num_clients, ...])."""
        return {}

    def start(self, w: torch.Tensor, state: Tensors) -> torch.Tensor:
        """The model the sampled clients receive and start from (the ``w0`` of the client hooks); default w,
        FedACG: the look-ahead x_t + λ m_t. ``aggregate`` still gets w."""
        return w

    def message(self, w: torch.Tensor, state: Tensors, clients: torch.Tensor) -> Tensors:
        """Tensors sent to the sampled clients besides w, stacked [n, ...]; counted as bytes down."""
        return {}

    def client_state(self, state: Tensors, clients: torch.Tensor) -> Tensors:
        """State the sampled clients hold themselves (not sent), stacked [n, ...]."""
        return {}

    def outputs(self, w: torch.Tensor, state: Tensors) -> Tensors:
        """Models besides w that the method reports (evaluated and logged as test_accuracy_<name>)."""
        return {}

    def eligible(self, state: Tensors) -> torch.Tensor | None:
        """Boolean mask [num_clients] of clients that may be sampled (None = all)."""
        return None

    # ---- one client (vmapped by the vectorized engine)
    def objective(self, w, w0, recv: Tensors) -> torch.Tensor | None:
        """Extra term added to the local loss (None = plain empirical risk)."""
        return None

    def direction(self, g, w, w0, recv: Tensors) -> torch.Tensor:
        """The step direction handed to the client optimizer, from the stochastic gradient g."""
        return g

    def local_init(self, w0, recv: Tensors, optimizer) -> Tensors:
        """The client's within-round state at the start of a round (default: fresh optimizer state)."""
        return optimizer.init(w0)

    def local_step(self, w, local: Tensors, w0, recv: Tensors, grad_at, optimizer, lr):
        """One local step; ``grad_at(v)`` gives (∇ of the local objective at v on this step's minibatch,
        data loss at v). Returns (new w, new local state, data loss)."""
        g, loss = grad_at(w)
        w, local = optimizer.step(w, self.direction(g, w, w0, recv), local, lr)
        return w, local, loss

    def upload(self, w0, w, recv: Tensors, steps, local: Tensors) -> Tensors:
        """What the client sends back after ``steps`` local steps; 'delta' = y_i − x_t is the model update."""
        return {"delta": w - w0}

    # ---- server: aggregation and global step
    def weights(self, sizes: torch.Tensor) -> torch.Tensor:
        """Aggregation weights p_i over the sampled clients (sum to 1)."""
        if self.weighting == "uniform":
            return torch.full_like(sizes, 1.0 / len(sizes), dtype=torch.float32)
        sizes = sizes.float()
        return sizes / sizes.sum()

    def aggregate(self, w, state: Tensors, ups: Tensors, clients, sizes) -> tuple[torch.Tensor, Tensors, Tensors]:
        """New global model, new state, and per-client metrics ([n] tensors) to log."""
        return w + self.server_lr * (self.weights(sizes) @ ups["delta"]), state, {}

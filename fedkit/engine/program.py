"""The contract between an engine and the client side of an algorithm: a few pure functions of tensors.

An engine runs, for every sampled client, ``local_init`` once, ``local_step`` K_i times (each with a fresh minibatch
whose loss is ``objective``; ``epoch_start``, when the program has one, before the first step of every pass over
the client's data), then ``local_final``. The functions are written for ONE client; the vectorized engine
``vmap``s them over the stacked clients, so they must be plain tensor code without data-dependent Python
branching. ``epoch_start`` and ``local_final`` may evaluate the client's whole training set (``LocalData``).
Engines know nothing else of an algorithm.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

import torch

Tensors = dict[str, torch.Tensor]


class ClientInput(NamedTuple):
    """What one client has in a round (the engines stack it [n, ...] over the sampled clients)."""

    w0: torch.Tensor  # the model it received (broadcast)
    recv: Tensors  # the server's message to it (counted as traffic)
    kept: Tensors  # what it kept from its earlier rounds (client-held state, not traffic)
    steps: torch.Tensor  # K_i, its local steps this round
    lr: float  # this round's local learning rate η_l (the client optimizer's schedule)
    t: int  # the round, 1-based
    rows: torch.Tensor | None = None  # its training samples, indices into the training set (−1 pads a stack);
    # set by the engine


class Batch:
    """One local step's minibatch, seen by ``objective``: x, y, the mask of real rows, the model's output at the
    current parameters (``out``), the input to its output layer (``features``, when the program asks for them)
    and ``model(v)`` to evaluate other parameters on the same batch (MOON's global and previous models)."""

    def __init__(self, x, y, mask, out, features, model: Callable):
        self.x, self.y, self.mask, self.out, self.features, self.model = x, y, mask, out, features, model

    def mean(self, per_sample: torch.Tensor) -> torch.Tensor:
        """Mean over the real rows of the batch."""
        return (per_sample * self.mask).sum() / self.mask.sum().clamp_min(1)


class LocalData(Protocol):
    """Passes over one client's whole training set (the samples ``c.rows``) at parameters v, in evaluation mode;
    under ``vmap`` each client of the stack is evaluated on its own samples."""

    def evaluate(self, v: torch.Tensor, c: ClientInput) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean data loss, accuracy as a fraction; NaN for an objective task)."""

    def gradient(self, v: torch.Tensor, c: ClientInput) -> torch.Tensor:
        """∇_v of the data loss SUMMED over the samples."""


GradAt = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


class ClientProgram(Protocol):
    needs_features: bool  # whether ``objective`` reads batch.features
    # Optional ``reads_round_in_step: bool`` (default True): False says that ``local_step`` never reads ``c.t``,
    # so a step captured as a CUDA graph in one round is replayed in the next (the vectorized engine on CUDA).
    epoch_start: Callable[[torch.Tensor, Tensors, ClientInput, LocalData], Tensors] | None
    """(w, local, c, data) -> local: run before each epoch's first step (None: no such hook)."""

    def objective(self, data: torch.Tensor, w: torch.Tensor, c: ClientInput, batch: Batch) -> torch.Tensor:
        """The local loss to differentiate, from the minibatch's data loss ``data`` at parameters w."""

    def local_init(self, c: ClientInput) -> tuple[torch.Tensor, Tensors]:
        """The first local iterate and the within-round state (optimizer moments, ...)."""

    def local_step(self, w, local: Tensors, c: ClientInput, grad_at: GradAt) -> tuple[torch.Tensor, Tensors,
                                                                                        torch.Tensor]:
        """One local step; ``grad_at(v)`` gives (∇ objective at v, data loss at v) on this step's minibatch.
        Returns (new w, new local state, the step's data loss)."""

    def local_final(self, w, local: Tensors, c: ClientInput, data: LocalData) -> tuple[Tensors, Tensors]:
        """(what the client uploads, what it keeps for its next round)."""

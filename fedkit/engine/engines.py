"""How the sampled clients execute a round: one after another, or all at once with torch.func.vmap.

Both engines run the same single-client functions (``make_client_step`` and the algorithm's ``upload``) on
the same batch plans, so they produce the same numbers; a test holds them together.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch.func import vmap

from ..errors import ConfigError
from .functional import FlatModel, make_client_step
from .plan import ClientPlan


@dataclass
class RoundResult:
    uploads: dict[str, torch.Tensor]  # stacked [n, ...]
    train_loss: torch.Tensor  # [n] mean data loss over each client's local steps
    seconds: list[float]  # wall-clock compute time per client (vectorized: the round's time shared evenly)
    buffers: dict[str, torch.Tensor] | None = None  # each client's BatchNorm statistics, stacked [n, ...]


class Engine:
    vectorized = False  # whether the client step runs under vmap

    def __init__(self, fm: FlatModel, algorithm, optimizer, task: str, x: torch.Tensor, y: torch.Tensor):
        self.fm, self.algorithm, self.optimizer = fm, algorithm, optimizer
        self.x, self.y = x, y
        self.step = make_client_step(fm, algorithm, optimizer, task, self.vectorized)

    def _sync(self):
        if self.x.is_cuda:
            torch.cuda.synchronize(self.x.device)

    def train(self, w0: torch.Tensor, recv: dict[str, torch.Tensor], plans: list[ClientPlan], lr: float
              ) -> RoundResult:
        raise NotImplementedError


class SequentialEngine(Engine):
    """The reference: each client trains alone; its compute time is measured on its own.

    Set ``trace`` to a list to collect every client's local iterates (for drift pictures).
    """

    trace: list | None = None
    warmed_up = False

    def train(self, w0, recv, plans, lr):
        if not self.warmed_up and plans:
            self._warm_up(w0, {k: v[0] for k, v in recv.items()}, plans[0], lr)
        uploads, losses, seconds, buffers = [], [], [], []
        for j, plan in enumerate(plans):
            self._sync()
            start = time.perf_counter()
            mine_buffers = {k: v.clone() for k, v in self.fm.buffers.items()}  # this client's statistics
            mine = {k: v[j] for k, v in recv.items()}
            w, state = w0.clone(), self.algorithm.local_init(w0, mine, self.optimizer)
            step_losses, path = [], [w]
            real = plan.mask.sum(1).long().tolist()  # padding sits at the end: drop it (BatchNorm sees real rows)
            indices, mask = plan.indices.to(w0.device), plan.mask.to(w0.device)
            for k in range(plan.steps):
                rows = indices[k, :real[k]]
                w, state, loss = self.step(w, state, w0, mine, self.x[rows], self.y[rows], mask[k, :real[k]], lr,
                                           mine_buffers)
                step_losses.append(loss)
                path.append(w)
            if self.trace is not None:
                self.trace.append(path)
            steps = torch.tensor(float(plan.steps), device=w.device)
            uploads.append(self.algorithm.upload(w0, w, mine, steps, state))
            losses.append(torch.stack(step_losses).mean())
            buffers.append(mine_buffers)
            self._sync()
            seconds.append(time.perf_counter() - start)
        stack = lambda rows: {k: torch.stack([r[k] for r in rows]) for k in rows[0]} if rows[0] else None
        return RoundResult(stack(uploads), torch.stack(losses).detach(), seconds, stack(buffers))

    def _warm_up(self, w0, mine, plan, lr):
        """One untimed local step on copies, so that one-off costs of a process's first step (kernel set-up,
        allocator growth: up to 2 s on a CPU) do not land in the first client's time."""
        rows = plan.indices[0, :int(plan.mask[0].sum())].to(w0.device)
        state = self.algorithm.local_init(w0, mine, self.optimizer)
        buffers = {k: v.clone() for k, v in self.fm.buffers.items()}
        self.step(w0.clone(), state, w0, mine, self.x[rows], self.y[rows], plan.mask[0, :len(rows)].to(w0.device), lr,
                  buffers)
        self.warmed_up = True


class VectorizedEngine(Engine):
    """All sampled clients step in lockstep over stacked parameters [n, d]; data are gathered by index.

    Clients with fewer local steps than the longest are masked once they are done.
    """

    vectorized = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.fm.buffers:
            raise ConfigError("engine 'vectorized' cannot run a model with buffers (BatchNorm running "
                              "statistics); use engine='sequential' or a GroupNorm variant")
        self.vstep = vmap(self.step, in_dims=(0, 0, None, 0, 0, 0, 0, None, None))
        self.vupload = vmap(self.algorithm.upload, in_dims=(None, 0, 0, 0, 0))
        self.vinit = vmap(self.algorithm.local_init, in_dims=(0, 0, None))

    def train(self, w0, recv, plans, lr):
        self._sync()
        start = time.perf_counter()
        n, device = len(plans), w0.device
        steps = torch.tensor([p.steps for p in plans], device=device)
        k_max, batch = int(steps.max()), plans[0].indices.shape[1]
        indices = torch.zeros(n, k_max, batch, dtype=torch.int64)
        mask = torch.zeros(n, k_max, batch)
        for j, p in enumerate(plans):
            indices[j, :p.steps], mask[j, :p.steps] = p.indices, p.mask
        indices, mask = indices.to(device), mask.to(device)

        w = w0.expand(n, -1).clone()
        state = self.vinit(w, recv, self.optimizer)
        loss_sum = torch.zeros(n, device=device)
        for k in range(k_max):
            rows = indices[:, k]
            w_new, state_new, loss = self.vstep(w, state, w0, recv, self.x[rows], self.y[rows], mask[:, k], lr, {})
            active = k < steps
            if bool(active.all()):
                w, state = w_new, state_new
            else:
                w = _where_active(active, w_new, w)
                state = {key: _where_active(active, state_new[key], state[key]) for key in state}
            loss_sum = loss_sum + torch.where(active, loss, torch.zeros_like(loss))
        uploads = self.vupload(w0, w, recv, steps.float(), state)
        self._sync()
        share = (time.perf_counter() - start) / n
        return RoundResult(uploads, (loss_sum / steps).detach(), [share] * n)


def _where_active(active: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """Rows of ``new`` for the clients still stepping, rows of ``old`` for those done."""
    return torch.where(active.view(-1, *[1] * (new.dim() - 1)), new, old)


ENGINES = {"sequential": SequentialEngine, "vectorized": VectorizedEngine}

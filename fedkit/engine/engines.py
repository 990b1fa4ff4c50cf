"""How the sampled clients execute a round: one after another, or all at once with torch.func.vmap.

Both engines run the same client program (``ClientProgram``: init, step, final and the local objective) on the
same batch plans, so they produce the same numbers; a test holds them together.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from torch.func import vmap
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from ..errors import ConfigError
from .functional import ClientData, FlatModel, make_client_step
from .plan import ClientPlan
from .program import ClientInput, ClientProgram

Tensors = dict[str, torch.Tensor]


@dataclass
class RoundResult:
    uploads: Tensors  # stacked [n, ...]
    kept: Tensors  # what each client keeps for its next round, stacked [n, ...]
    train_loss: torch.Tensor  # [n] mean data loss over each client's local steps
    seconds: list[float]  # wall-clock compute time per client (vectorized: the round's time shared evenly)
    buffers: Tensors = field(default_factory=dict)  # each client's BatchNorm statistics after training, [n, ...]
    paths: list | None = None  # with trace=True: each client's local iterates [w_0, ..., w_K]


class Engine:
    vectorized = False  # whether the client step runs under vmap

    def __init__(self, fm: FlatModel, program: ClientProgram, task: str, x: torch.Tensor, y: torch.Tensor,
                 compile: bool = False):
        if compile and not self.vectorized:
            raise ConfigError("compile=True needs engine='vectorized' (it compiles the stacked clients' gradient)")
        self.fm, self.program, self.task = fm, program, task
        self.x, self.y = x, y
        self.step = make_client_step(fm, program, task, self.vectorized, compile)

    @property
    def compile_seconds(self) -> float:
        """Wall time spent in calls that compiled (compile=True), since the engine was built."""
        return getattr(self.step.gradient, "compile_seconds", 0.0)

    def _sync(self):
        if self.x.is_cuda:
            torch.cuda.synchronize(self.x.device)

    def train(self, clients: ClientInput, plans: list[ClientPlan], buffers: Tensors, trace: bool = False
              ) -> RoundResult:
        """Local training of the clients (``clients`` stacked [n, ...], one plan each) from their BatchNorm
        statistics ``buffers`` ([n, ...]; empty for a model without them)."""
        raise NotImplementedError


def _pick(c: ClientInput, j) -> ClientInput:
    """Client j of a stack (j an int), or the sub-stack of clients j (an index tensor)."""
    return c._replace(w0=c.w0[j], recv=tree_map(lambda v: v[j], c.recv), kept=tree_map(lambda v: v[j], c.kept),
                      steps=c.steps[j], rows=None if c.rows is None else c.rows[j])


def _stack(rows: list[Tensors]) -> Tensors:
    return {k: torch.stack([r[k] for r in rows]) for k in rows[0]} if rows else {}


class SequentialEngine(Engine):
    """The reference: each client trains alone; its compute time is measured on its own."""

    warmed_up = False

    def train(self, clients, plans, buffers, trace=False):
        if not plans:
            return RoundResult({}, {}, torch.zeros(0), [])
        if not self.warmed_up:
            self._warm_up(_pick(clients, 0), plans[0], {k: v[0] for k, v in buffers.items()})
        uploads, kept, losses, seconds, after, paths = [], [], [], [], [], []
        for j, plan in enumerate(plans):
            self._sync()
            start = time.perf_counter()
            mine_buffers = {k: v[j].clone() for k, v in buffers.items()}  # this client's statistics
            c = _pick(clients, j)._replace(rows=plan.samples.to(clients.w0.device))
            data = ClientData(self.fm, self.task, self.x, self.y, mine_buffers)
            w, local = self.program.local_init(c)
            step_losses, path = [], [w]
            real = plan.mask.sum(1).long().tolist()  # padding sits at the end: drop it (BatchNorm sees real rows)
            indices, mask = plan.indices.to(w.device), plan.mask.to(w.device)
            for k in range(plan.steps):
                if self.program.epoch_start is not None and k % plan.per_epoch == 0:
                    local = self.program.epoch_start(w, local, c, data)
                rows = indices[k, :real[k]]
                w, local, loss = self.step(w, local, c, self.x.index_select(0, rows), self.y.index_select(0, rows),
                                           mask[k, :real[k]], mine_buffers)
                step_losses.append(loss)
                if trace:
                    path.append(w)
            up, keep = self.program.local_final(w, local, c, data)
            uploads.append(up)
            kept.append(keep)
            losses.append(torch.stack(step_losses).mean())
            after.append(mine_buffers)
            paths.append(path)
            self._sync()
            seconds.append(time.perf_counter() - start)
        return RoundResult(_stack(uploads), _stack(kept), torch.stack(losses).detach(), seconds, _stack(after),
                           paths if trace else None)

    def _warm_up(self, c, plan, buffers):
        """One untimed local step on copies, so that one-off costs of a process's first step (kernel set-up,
        allocator growth: up to 2 s on a CPU) do not land in the first client's time."""
        rows = plan.indices[0, :int(plan.mask[0].sum())].to(c.w0.device)
        w, local = self.program.local_init(c)
        self.step(w.clone(), local, c, self.x[rows], self.y[rows], plan.mask[0, :len(rows)].to(c.w0.device),
                  {k: v.clone() for k, v in buffers.items()})
        self.warmed_up = True


class VectorizedEngine(Engine):
    """All sampled clients step in lockstep over stacked parameters [n, d]; data are gathered by index.

    A client with fewer local steps than the longest leaves the stack once it is done (its rows are not computed
    on); per step, no column that is padding for every client is computed.
    """

    vectorized = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not vectorizable(self.fm):
            raise ConfigError(f"engine 'vectorized' cannot run model {type(self.fm.module).__name__!r}: its forward "
                              "has data-dependent control flow, which torch.func.vmap rejects; use engine='sequential'")
        if self.fm.buffers:
            raise ConfigError("engine 'vectorized' cannot run a model with buffers (BatchNorm running "
                              "statistics); use engine='sequential' or a GroupNorm variant")
        self.data = ClientData(self.fm, self.task, self.x, self.y)
        dims = ClientInput(0, 0, 0, 0, None, None, 0)
        self.gradient = self.step.gradient
        self.at_w: bool | None = None  # whether local_step asks for the gradient at w itself (known after a step)
        self.hit = False  # whether the step in progress asked for it
        self.vinit = vmap(self.program.local_init, in_dims=(dims,))
        self.vfinal = vmap(self.program.local_final, in_dims=(0, 0, dims, None))
        if self.program.epoch_start is not None:
            self.vepoch = vmap(self.program.epoch_start, in_dims=(0, 0, dims, None))

    def train(self, clients, plans, buffers, trace=False):
        if trace:
            raise ConfigError("tracing local paths needs engine='sequential'")
        if not plans:
            return RoundResult({}, {}, torch.zeros(0), [])
        self._sync()
        start = time.perf_counter()
        n, device = len(plans), clients.w0.device
        counts = [p.steps for p in plans]  # host-side: no device sync to learn who is still stepping
        k_max, batch = max(counts), plans[0].indices.shape[1]
        indices = torch.zeros(n, k_max, batch, dtype=torch.int64)
        mask = torch.zeros(n, k_max, batch)
        for j, p in enumerate(plans):
            indices[j, :p.steps], mask[j, :p.steps] = p.indices, p.mask
        widths = mask.sum(2).amax(0).long().tolist()  # per step, the most real rows of any client: no column
        # of pure padding is computed (equal clients reach their short last batch together)
        indices, mask = indices.to(device), mask.to(device)
        samples = torch.full((n, max(len(p.samples) for p in plans)), -1, dtype=torch.int64)
        for j, p in enumerate(plans):
            samples[j, :len(p.samples)] = p.samples
        clients = clients._replace(rows=samples.to(device))

        w, local = self.vinit(clients)
        full_w, full_local, loss_sum = w, local, torch.zeros(n, device=device)
        ids, stack, stack_plans = torch.arange(n, device=device), clients, plans
        for k in range(k_max):
            going = [j for j, p in enumerate(stack_plans) if k < p.steps]
            if len(going) < len(stack_plans):  # some clients are done: store their state, step on without them
                full_w, full_local = _write_back(full_w, full_local, ids, w, local)
                keep = torch.tensor(going, device=device)
                ids, stack, stack_plans = ids[keep], _pick(stack, keep), [stack_plans[j] for j in going]
                w, local = w[keep], _rows_of(local, keep)
                indices, mask = indices[keep], mask[keep]
            if self.program.epoch_start is not None:
                local = self._epoch_start(k, stack_plans, w, local, stack)
            rows = indices[:, k, :widths[k]]
            w, local, loss = self._step(w, local, stack, _gather(self.x, rows), _gather(self.y, rows),
                                        mask[:, k, :widths[k]])
            loss_sum = loss_sum.index_add(0, ids, loss)
        full_w, full_local = _write_back(full_w, full_local, ids, w, local)
        uploads, kept = self.vfinal(full_w, full_local, clients, self.data)
        self._sync()
        share = (time.perf_counter() - start) / n
        return RoundResult(uploads, kept, (loss_sum / clients.steps).detach(), [share] * n)

    def _step(self, w, local, clients, x, y, mask):
        """One local step of the stack, vmapped over flat leaves (less pytree work per step than the structures).
        A program that takes the gradient at w itself (most do) gets it computed outside vmap beforehand: the same
        numbers, without a custom autograd.Function under vmap per step."""
        at_w = () if self.at_w is False else self.gradient.outside(w, clients, x, y, mask)
        c_leaves, c_spec = tree_flatten(clients)
        l_leaves, l_spec = tree_flatten(local)
        first, split = len(at_w), len(at_w) + len(l_leaves)
        self.hit = False

        def step(w, x, y, mask, *rest):
            c = tree_unflatten(rest[split:], c_spec)

            def grad_at(v):
                if at_w and v is w:
                    self.hit = True
                    return rest[:first]
                return self.gradient(v, c, x, y, mask)
            return self.program.local_step(w, tree_unflatten(rest[first:split], l_spec), c, grad_at)

        dims = (0,) * (4 + split) + tuple(0 if isinstance(t, torch.Tensor) else None for t in c_leaves)
        out = vmap(step, in_dims=dims)(w, x, y, mask, *at_w, *l_leaves, *c_leaves)
        if self.at_w is None:
            self.at_w = self.hit
        return out

    def _epoch_start(self, k, plans, w, local, clients):
        """``epoch_start`` for the clients whose epoch begins at step k (epoch lengths differ between clients)."""
        starting = [j for j, p in enumerate(plans) if k < p.steps and k % p.per_epoch == 0]
        if len(starting) == len(plans):
            return self.vepoch(w, local, clients, self.data)
        if not starting:
            return local
        ids = torch.tensor(starting, device=w.device)
        new = self.vepoch(w[ids], tree_map(lambda v: v[ids], local), _pick(clients, ids), self.data)
        return tree_map(lambda old, part: old.index_copy(0, ids, part), local, new)


def _gather(data: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """data[rows] for an index matrix rows [n, B] (index_select: a third of advanced indexing's time on a CPU)."""
    return data.index_select(0, rows.reshape(-1)).view(*rows.shape, *data.shape[1:])


def _rows_of(tree, rows: torch.Tensor):
    """The rows ``rows`` of every tensor of a pytree of stacks."""
    return tree_map(lambda v: v[rows], tree)


def _write_back(full_w: torch.Tensor, full_local: Tensors, ids: torch.Tensor, w: torch.Tensor, local: Tensors):
    """The whole stack's iterates and local state with rows ``ids`` replaced by a sub-stack's."""
    if len(ids) == len(full_w):
        return w, local
    return full_w.index_copy(0, ids, w), tree_map(lambda f, v: f.index_copy(0, ids, v), full_local, local)


ENGINES = {"sequential": SequentialEngine, "vectorized": VectorizedEngine}


def vectorizable(fm: FlatModel) -> bool:
    """Whether the model can run under torch.func.vmap: a module says it cannot with ``vectorizable = False``
    (a Hugging Face transformer: its attention masks branch on tensor values)."""
    return getattr(fm.module, "vectorizable", True)


CPU_VECTORIZED_MAX_PARAMETERS = 200_000  # chains up to this size run vectorized on a CPU (see choose_engine)


def choose_engine(name: str, fm: FlatModel, device: torch.device) -> str:
    """The engine a config's ``engine`` names; "auto" picks the faster one for the model and device, by a rule
    read off benchmarks/engines.py (README, "Engines and speed": a 2-thread CPU and an H100):
    - a model with BatchNorm statistics (the vectorized engine cannot carry them), or one that cannot run under
      vmap (``vectorizable = False``, e.g. lora_transformer): sequential;
    - on a GPU, everything else: vectorized;
    - on a CPU, layer chains (``FlatModel.chain``: MLPs, the small CNNs, LeNet-5) of at most 200k parameters:
      vectorized; larger chains (FC-500, the TF CNN) and every other model (the LSTMs): sequential (there the
      vectorized engine was not reliably faster)."""
    if name != "auto":
        return name
    if fm.buffers or not vectorizable(fm):
        return "sequential"
    if device.type != "cpu":
        return "vectorized"
    return "vectorized" if fm.chain is not None and fm.dim <= CPU_VECTORIZED_MAX_PARAMETERS else "sequential"

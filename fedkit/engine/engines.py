"""How the sampled clients execute a round: one after another, or all at once with torch.func.vmap.

Both engines run the same client program (``ClientProgram``: init, step, final and the local objective) on the
same batch plans, so they produce the same numbers; a test holds them together.
"""
from __future__ import annotations

import ctypes
import os
import platform
import time
from contextlib import contextmanager
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

    ``static`` (default: on with CUDA graphs, else off): every step has the same shapes instead: the whole stack
    and the whole batch, a client whose steps are done masked (its state kept by ``torch.where``, its rows all
    padding). ``cuda_graphs`` (default: on when the data are on a CUDA device and ``compile`` is off): the static
    step is captured once as a CUDA graph (after one eager step of the round, which warms it up) and replayed for
    every later step, and for later rounds of the same shapes, η_l and (unless the program says that its
    ``local_step`` does not read it, ``reads_round_in_step = False``) round t. A step that cannot be captured
    (a host synchronisation in the program, ...) runs eagerly from then on; ``graph_error`` says why.
    """

    vectorized = True

    def __init__(self, fm, program, task, x, y, compile: bool = False, cuda_graphs: bool | None = None,
                 static: bool | None = None):
        super().__init__(fm, program, task, x, y, compile)
        if cuda_graphs is None:
            cuda_graphs = x.is_cuda and not compile
        if cuda_graphs and not x.is_cuda:
            raise ConfigError("cuda_graphs=True needs the training data on a CUDA device")
        self.cuda_graphs = cuda_graphs
        self.static = cuda_graphs if static is None else static
        if cuda_graphs and not self.static:
            raise ConfigError("cuda_graphs=True needs static=True (a captured step has fixed shapes)")
        self.graph: _CapturedStep | None = None  # the captured step, kept for rounds of the same key
        self.graph_error: str | None = None  # why a step could not be captured (then the static steps run eagerly)
        self.replays = 0  # captured steps replayed (a test reads it)
        if not vectorizable(self.fm):
            raise ConfigError(f"engine 'vectorized' cannot run model {type(self.fm.module).__name__!r}: its forward "
                              "has data-dependent control flow, which torch.func.vmap rejects; use engine='sequential'")
        if self.fm.buffers:
            raise ConfigError("engine 'vectorized' cannot run a model with buffers (BatchNorm running "
                              "statistics); use engine='sequential' or a GroupNorm variant")
        self.data = ClientData(self.fm, self.task, self.x, self.y)
        if self.x.device.type == "cpu":
            keep_freed_memory()
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
        if self.static:
            w, local, loss_sum = self._train_static(w, local, clients, plans, indices, mask)
        else:
            w, local, loss_sum = self._train_shrinking(w, local, clients, plans, indices, mask, widths)
        uploads, kept = self.vfinal(w, local, clients, self.data)
        self._sync()
        share = (time.perf_counter() - start) / n
        return RoundResult(uploads, kept, (loss_sum / clients.steps).detach(), [share] * n)

    def _train_shrinking(self, w, local, clients, plans, indices, mask, widths):
        """The round's steps, a client leaving the stack when its steps are done."""
        n, device = len(plans), w.device
        full_w, full_local, loss_sum = w, local, torch.zeros(n, device=device)
        ids, stack, stack_plans = torch.arange(n, device=device), clients, plans
        for k in range(len(widths)):
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
        return full_w, full_local, loss_sum

    def _train_static(self, w, local, clients, plans, indices, mask):
        """The round's steps on fixed shapes: the whole stack and batch every step, a done client masked; with
        ``cuda_graphs``, replayed from a captured step."""
        n, device = len(plans), w.device
        active = torch.arange(indices.shape[1], device=device) < torch.tensor([p.steps for p in plans],
                                                                               device=device)[:, None]  # [n, K]
        l_leaves, l_spec = tree_flatten(local)
        c_leaves, c_spec = tree_flatten(clients._replace(rows=None))  # local_step has no LocalData: no rows
        tensors = [i for i, t in enumerate(c_leaves) if isinstance(t, torch.Tensor)]
        state = [w, *l_leaves, torch.zeros(n, device=device)]

        def step(state, inputs):
            """The masked step: state (w, local's leaves, loss sum) and inputs (rows, mask, active, the clients'
            tensors) to the new state."""
            w, *l_leaves, loss_sum = state
            rows, mask, active, *c_tensors = inputs
            leaves = list(c_leaves)
            for i, t in zip(tensors, c_tensors):
                leaves[i] = t
            c = tree_unflatten(leaves, c_spec)
            w_new, l_new, loss = self._step(w, tree_unflatten(l_leaves, l_spec), c, _gather(self.x, rows),
                                            _gather(self.y, rows), mask)
            l_new = tree_flatten(l_new)[0]
            if len(l_new) != len(l_leaves):
                raise ValueError("local_step changed the structure of its local state")
            out = [torch.where(active[:, None], w_new, w)]
            out += [torch.where(active.view(-1, *[1] * (old.dim() - 1)), new, old) for new, old in zip(l_new, l_leaves)]
            return [*out, loss_sum + torch.where(active, loss, torch.zeros_like(loss))]

        c_tensors = [c_leaves[i] for i in tensors]
        key = self._graph_key(state, c_leaves, indices.shape[2], clients)
        in_graph = False  # whether the state is in the captured step's buffers
        for k in range(indices.shape[1]):
            if self.program.epoch_start is not None:
                w, *l_leaves, loss_sum = self.graph.state if in_graph else state
                l_new = tree_flatten(self._epoch_start(k, plans, w, tree_unflatten(l_leaves, l_spec), clients))[0]
                if in_graph:
                    self.graph.load([w, *l_new, loss_sum])
                else:
                    state = [w, *l_new, loss_sum]
            inputs = [indices[:, k], mask[:, k], active[:, k], *c_tensors]
            if not self.cuda_graphs or self.graph_error is not None:
                state = step(state, inputs)
                continue
            if not in_graph and self._live(key):  # captured in an earlier round
                self.graph.load(state, inputs)
                in_graph = True
            if not in_graph:
                if k == 0:  # the round's first step runs eagerly (the capture's warm-up), the next is captured
                    with _side_stream(device):
                        state = step(state, inputs)
                    continue
                stream = torch.cuda.current_stream(device) if device.type == "cuda" else None
                try:
                    self.graph = _CapturedStep(step, state, inputs, key)
                except Exception as error:  # noqa: BLE001 (whatever the program did under capture)
                    self.graph, self.graph_error = None, f"{type(error).__name__}: {error}"
                    if stream is not None:  # a failed capture can leave its own stream current
                        torch.cuda.set_stream(stream)
                    self._sync()
                    state = step(state, inputs)
                    continue
                in_graph = True
            self.graph.replay(inputs[:3])
            self.replays += 1
        if in_graph:
            state = [t.clone() for t in self.graph.state]  # the graph's buffers are reused by the next round
        w, *l_leaves, loss_sum = state
        return w, tree_unflatten(l_leaves, l_spec), loss_sum

    def _live(self, key) -> bool:
        return self.graph is not None and self.graph.key == key

    def _graph_key(self, state, c_leaves, batch, clients):
        """What a captured step is specific to: the shapes and dtypes of its tensors, the batch, the structure of
        the clients' inputs and their Python values (η_l; round t unless the program's step does not read it)."""
        reads_t = getattr(self.program, "reads_round_in_step", True)
        others = tuple(v for v in tree_flatten((clients.recv, clients.kept))[0] if not isinstance(v, torch.Tensor))
        shapes = tuple((tuple(t.shape), t.dtype) for t in state + [t for t in c_leaves if isinstance(t, torch.Tensor)])
        return (shapes, batch, clients.lr, clients.t if reads_t else None, others,
                str(tree_flatten(clients._replace(rows=None))[1]))

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


_MALLOC_SET = False


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed memory for the next allocation instead of handing it back to the system.

    A stacked step allocates and frees the same large activations every step (the CNN's first convolution
    output: 17.7 MB for 20 clients). glibc's default returns the freed top of its heap to the system once more
    than twice the largest freed block is free, so every step faulted its pages in again: 120,000-400,000 minor
    page faults a round, 30 % of the CNN's round on a 2-core CPU (benchmarks/results/2026-11-27-cpu-cnn-engines).
    This raises the trim threshold to 1 GiB and serves blocks up to 32 MiB (glibc's ceiling) from the heap. Once per
    process, for the CPU vectorized engine; a no-op where the C library is not glibc, or with the environment
    variable FEDKIT_KEEP_FREED_MEMORY=0. Returns whether it was set."""
    global _MALLOC_SET
    if _MALLOC_SET:
        return True
    if os.environ.get("FEDKIT_KEEP_FREED_MEMORY") == "0":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    trim = libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    mmap = libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
    _MALLOC_SET = bool(trim and mmap)
    return _MALLOC_SET


@contextmanager
def _side_stream(device: torch.device):
    """Work on a side stream of a CUDA device, joined to the current stream after (the warm-up before a capture,
    as torch.cuda.graph asks); nothing on other devices."""
    if device.type != "cuda":
        yield
        return
    side, current = torch.cuda.Stream(device), torch.cuda.current_stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        yield
    current.wait_stream(side)


class _CapturedStep:
    """A static step captured as a CUDA graph: ``step(state, inputs) -> new state`` over buffers it owns; each
    replay reads the inputs' buffers and writes the new state into the state's buffers."""

    def __init__(self, step, state: list[torch.Tensor], inputs: list[torch.Tensor], key):
        self.key = key
        self.state = [t.clone() for t in state]
        self.inputs = [t.clone() for t in inputs]
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            new = step(self.state, self.inputs)
            for buffer, t in zip(self.state, new):
                buffer.copy_(t)

    def load(self, state: list[torch.Tensor], inputs: list[torch.Tensor] | None = None):
        """Set the state (and the inputs) the next replay starts from."""
        for buffer, t in zip(self.state, state):
            if buffer is not t:
                buffer.copy_(t)
        for buffer, t in zip(self.inputs, inputs or []):
            buffer.copy_(t)

    def replay(self, inputs: list[torch.Tensor]):
        """One step, with the leading inputs (the step's rows, mask and active clients) set first."""
        for buffer, t in zip(self.inputs, inputs):
            buffer.copy_(t)
        self.graph.replay()


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
    - on a CPU, layer chains (``FlatModel.chain``: MLPs, the small CNNs, LeNet-5 and FedDUAL's LeNet) of at most
      200k parameters: vectorized (2.2-2.4× a plain loop on the CNNs at 2 threads, benchmarks/results/
      2026-11-27-cpu-cnn-engines); larger chains (FC-500, the TF CNN) and every other model (the LSTMs):
      sequential (there the vectorized engine was not reliably faster)."""
    if name != "auto":
        return name
    if fm.buffers or not vectorizable(fm):
        return "sequential"
    if device.type != "cpu":
        return "vectorized"
    return "vectorized" if fm.chain is not None and fm.dim <= CPU_VECTORIZED_MAX_PARAMETERS else "sequential"

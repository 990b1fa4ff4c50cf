"""A model as a pure function of one flat parameter vector, and the local step built on it."""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial

import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap
from torch.utils._pytree import tree_flatten, tree_unflatten

from ..layout import Layout
from .program import Batch, ClientProgram


class FlatModel:
    """Wraps an ``nn.Module`` so that ``fm(w, x)`` evaluates it at the flat parameter vector ``w``."""

    def __init__(self, module: torch.nn.Module):
        self.module = module
        self.layout = Layout(module)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self.names = [n for n, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.frozen = {n: p.detach() for n, p in module.named_parameters() if not p.requires_grad}
        self.buffers = dict(module.named_buffers())
        self.output_layer = module.get_submodule(self.layout.layers[-1])
        self.chain = layer_chain(module, self.layout)
        self.dense = self.chain is not None and all(op not in ("conv", "pool") for op, _ in self.chain)
        self.hand_differentiable = self.dense and all(  # see chain_gradient
            op != "apply" or isinstance(arg, HAND_DIFFERENTIABLE)
            or (isinstance(arg, torch.nn.LeakyReLU) and arg.negative_slope > 0) for op, arg in self.chain)

    @property
    def dim(self) -> int:
        return sum(self.numels)

    def flat(self) -> torch.Tensor:
        """The module's current trainable parameters as one vector."""
        return torch.cat([p.detach().reshape(-1) for p in self.module.parameters() if p.requires_grad])

    def unflatten(self, w: torch.Tensor) -> dict[str, torch.Tensor]:
        return {n: t.view(s) for n, t, s in zip(self.names, w.split(self.numels), self.shapes)}

    def __call__(self, w: torch.Tensor, x: torch.Tensor, buffers: dict | None = None) -> torch.Tensor:
        """The output at parameters w; a training-mode forward updates ``buffers`` (default: the module's)."""
        buffers = self.buffers if buffers is None else buffers
        return functional_call(self.module, {**self.unflatten(w), **self.frozen, **buffers}, (x,))

    def features(self, w: torch.Tensor, x: torch.Tensor, buffers: dict | None = None):
        """(output, the output layer's input) at parameters w."""
        seen = []
        handle = self.output_layer.register_forward_pre_hook(lambda _, args: seen.append(args[0]))
        try:
            out = self(w, x, buffers)
        finally:
            handle.remove()
        return out, seen[-1]

    def stacked(self, w, x: torch.Tensor, features: bool = False):
        """(outputs [n, B, ...], output-layer inputs or None) of n models on their batches x [n, B, ...];
        differentiable with plain autograd. ``w``: the parameters, rows [n, d], or for a layer chain (run as
        batched matrix products and grouped convolutions) also the list of per-tensor blocks [n, numel] (whose
        gradients need no scatter into a full-width zero vector); any other model runs under vmap."""
        if self.chain is not None:
            return self._chain(w.split(self.numels, dim=1) if isinstance(w, torch.Tensor) else w, x)
        if features:
            return vmap(lambda v, u: self.features(v, u, {}))(w, x)
        return vmap(lambda v, u: self(v, u, {}))(w, x), None

    def _chain(self, params, x, tape: list | None = None):
        """The chain's forward for n models. Convolutions run as one convolution of n groups over the clients'
        channels side by side, [B, n·C, H, W] in channels-last memory (the fastest layout on a CPU, measured).
        ``tape`` (a dense chain) collects what ``chain_gradient``'s backward needs: per Linear its 3-d input and
        weight, per Flatten its input shape, per activation its output."""
        h, features, n = x, None, len(x)
        grouped = False  # whether h is [B, n·C, H, W] rather than [n, B, ...]
        for op, arg in self.chain:
            if op == "conv":
                weight, bias, _, layer = arg
                if not grouped:
                    h = h.transpose(0, 1).flatten(1, 2).contiguous(memory_format=torch.channels_last)
                    grouped = True
                h = F.conv2d(h, params[weight].reshape(n * layer.out_channels, *self.shapes[weight][1:]),
                             None if bias is None else params[bias].reshape(-1), layer.stride, layer.padding,
                             layer.dilation, groups=n)
                continue
            if op == "pool" or (op == "apply" and grouped):
                h = arg(h) if grouped else arg(h.flatten(0, 1)).unflatten(0, (n, -1))
                continue
            if grouped:  # back to [n, B, C, H, W]
                h = h.unflatten(1, (n, -1)).transpose(0, 1)
                grouped = False
            if op == "linear":
                weight, bias, is_output, _ = arg
                if is_output:
                    features = h
                lead = h.shape[1:-1]
                h3 = h.reshape(n, -1, h.shape[-1])
                weight_m = params[weight].view(n, *self.shapes[weight])
                if tape is not None:
                    tape.append((op, arg, h3, weight_m))
                out = (torch.bmm(h3, weight_m.transpose(1, 2)) if bias is None else
                       torch.baddbmm(params[bias].unsqueeze(1), h3, weight_m.transpose(1, 2)))
                h = out.view(n, *lead, out.shape[-1])
            elif op == "flatten":
                if tape is not None:
                    tape.append((op, arg, h.shape, None))
                h = h.flatten(arg.start_dim + 1, arg.end_dim if arg.end_dim < 0 else arg.end_dim + 1)
            else:
                h = arg(h)
                if tape is not None:
                    tape.append((op, arg, h, None))
        if grouped:
            h = h.unflatten(1, (n, -1)).transpose(0, 1)
        return h, features


def chain_gradient(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """(∇ data loss [n, d], data loss [n]) of n dense-chain classifiers (rows of w) on their batches, the loss
    being each client's masked mean cross-entropy, back-propagated by hand (``fm.hand_differentiable``): the
    same numbers as autograd with a third of its per-step overhead on small models."""
    params = w.split(fm.numels, dim=1)
    n, b = mask.shape
    tape = []
    h, _ = fm._chain(params, x, tape)  # the forward, keeping what the backward needs
    log_p = torch.log_softmax(h.view(n, b, -1), dim=2)
    scale = (mask / mask.sum(1, keepdim=True).clamp_min(1)).unsqueeze(2)  # d(mean over real rows)/d(row)
    picked = log_p.gather(2, y.view(n, b, 1))
    data = -(picked * scale).sum((1, 2))
    delta = log_p.exp_().scatter_add_(2, y.view(n, b, 1), torch.full_like(picked, -1.0)).mul_(scale)  # ∂/∂logits
    grads = [None] * len(params)
    first = next(i for i, (op, *_) in enumerate(tape) if op == "linear")  # no gradient is needed below it
    for i in range(len(tape) - 1, first - 1, -1):
        op, arg, saved, weight_m = tape[i]
        if op == "linear":
            weight, bias, _, _ = arg
            delta3 = delta.reshape(n, -1, delta.shape[-1])
            grads[weight] = torch.bmm(delta3.transpose(1, 2), saved).view(n, -1)
            if bias is not None:
                grads[bias] = delta3.sum(1)
            if i == first:
                break
            delta = torch.bmm(delta3, weight_m).view(*delta.shape[:-1], saved.shape[-1])
        elif op == "flatten":
            delta = delta.reshape(saved)
        else:
            delta = _activation_backward(arg, delta, saved)
    return torch.cat(grads, dim=1), data


def _activation_backward(layer: torch.nn.Module, grad: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """grad through an elementwise activation, from its output."""
    if isinstance(layer, torch.nn.ReLU):
        return torch.ops.aten.threshold_backward(grad, out, 0)
    if isinstance(layer, torch.nn.Tanh):
        return grad * (1 - out * out)
    if isinstance(layer, torch.nn.Sigmoid):
        return grad * out * (1 - out)
    if isinstance(layer, torch.nn.LeakyReLU):
        return torch.where(out > 0, grad, grad * layer.negative_slope)
    return grad  # Identity


HAND_DIFFERENTIABLE = (torch.nn.ReLU, torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.Identity)  # from the output alone


ELEMENTWISE = (torch.nn.ReLU, torch.nn.LeakyReLU, torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.GELU, torch.nn.ELU,
               torch.nn.SiLU, torch.nn.Identity)
POOLING = (torch.nn.MaxPool2d, torch.nn.AvgPool2d, torch.nn.AdaptiveAvgPool2d, torch.nn.AdaptiveMaxPool2d)


def layer_chain(module: torch.nn.Module, layout: Layout) -> list | None:
    """The model as a chain of Linear and Conv2d layers, 2-d pooling, Flatten and elementwise activations (read
    from its torch.fx graph), which ``FlatModel.stacked`` runs for a stack of models as batched matrix products
    and grouped convolutions; None for any other model."""
    try:
        graph = torch.fx.symbolic_trace(module).graph
    except Exception:  # not traceable (data-dependent control flow, ...): not a chain
        return None
    index = {name: i for i, name in enumerate(n for n, p in module.named_parameters() if p.requires_grad)}
    chain, previous = [], None
    for node in graph.nodes:
        if node.op == "placeholder" and previous is None:
            previous = node
            continue
        if node.op == "output":
            return chain if chain and node.args[0] is previous else None
        if node.op != "call_module" or node.args != (previous,) or node.kwargs:
            return None
        layer = module.get_submodule(node.target)
        if isinstance(layer, (torch.nn.Linear, torch.nn.Conv2d)):
            if f"{node.target}.weight" not in index or (layer.bias is not None and f"{node.target}.bias" not in index):
                return None  # a frozen layer
            if isinstance(layer, torch.nn.Conv2d) and (layer.groups != 1 or layer.padding_mode != "zeros"):
                return None
            op = "linear" if isinstance(layer, torch.nn.Linear) else "conv"
            chain.append((op, (index[f"{node.target}.weight"], index.get(f"{node.target}.bias"),
                               node.target == layout.layers[-1], layer)))
        elif isinstance(layer, torch.nn.Flatten):
            chain.append(("flatten", layer))
        elif isinstance(layer, ELEMENTWISE):
            chain.append(("apply", layer))
        elif isinstance(layer, POOLING):
            chain.append(("pool", layer))
        else:
            return None
        previous = node
    return None


def sample_loss(task: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """Per-sample loss of a task: cross-entropy for classification, the model output itself for objectives."""
    if task == "classification":
        return lambda out, y: F.cross_entropy(out, y, reduction="none")
    return lambda out, y: out


def make_client_step(fm: FlatModel, program: ClientProgram, task: str, vectorized: bool = False,
                     compile: bool = False):
    """One local step of one client: ``(w, local, c, x, y, mask, buffers) -> (w, local, loss)``.

    ``local`` is the client's within-round state (optimizer moments, an algorithm's momentum, ...); the step
    itself is the program's ``local_step``, which may evaluate the minibatch gradient at any point.
    ``mask`` marks the real samples of a padded batch; the returned loss is the batch's data loss at w.
    ``buffers`` (BatchNorm statistics, updated in place) are an explicit input because torch.func forbids
    mutating tensors captured from outside a transformed function.
    ``vectorized``: the step will run under ``vmap``; its gradient is then computed for all clients at once with
    plain autograd (``StackedGradient``), not per client with ``torch.func.grad``. One client alone takes its
    gradient with plain autograd on a private copy of the module (``BoundGradient``). ``compile``: see
    ``StackedGradient``. The step's ``gradient`` attribute is the gradient object.
    """
    if vectorized:
        stacked = StackedGradient(fm, program, task, compile)
        gradient = lambda v, c, x, y, mask, buffers: stacked(v, c, x, y, mask)  # noqa: E731
    else:
        stacked = gradient = BoundGradient(fm, program, task)

    def step(w, local, c, x, y, mask, buffers):
        return program.local_step(w, local, c, lambda v: gradient(v, c, x, y, mask, buffers))

    step.gradient = stacked
    return step


class BoundGradient:
    """(∇ objective, data loss) of one client at v, computed like a plain PyTorch loop: the parameters of a private
    copy of the module are made views of v (no copy, no functional_call), and the module runs as is; the
    objective's own dependence on w (FedProx's proximal term, ...) reaches v through a leaf copy of it.
    The sequential engine hands it the real rows only, so the data loss is the plain batch mean (one fused op)."""

    def __init__(self, fm: FlatModel, program: ClientProgram, task: str):
        self.fm, self.program = fm, program
        self.mean_loss = F.cross_entropy if task == "classification" else lambda out, y: out.mean()
        self.module = copy.deepcopy(fm.module).train()
        self.params = [p for p in self.module.parameters() if p.requires_grad]
        self.slots = [_owner(self.module, name) for name in fm.buffers]
        self.seen: list[torch.Tensor] = []
        output_layer = self.module.get_submodule(fm.layout.layers[-1])
        output_layer.register_forward_pre_hook(lambda _, args: self.seen.append(args[0]))

    def __call__(self, v, c, x, y, mask, buffers):
        fm = self.fm
        for p, t in zip(self.params, v.detach().split(fm.numels)):
            p.data = t.view_as(p)  # the parameters become views of v: nothing is copied
        for (owner, name), b in zip(self.slots, buffers.values()):
            owner._buffers[name] = b  # this client's BatchNorm statistics, updated in place by the forward
        self.seen.clear()
        with torch.enable_grad():
            w = v.detach().requires_grad_(True)
            out = self.module(x)
            features = self.seen[-1] if self.program.needs_features else None
            batch = Batch(x, y, mask, out, features,
                          lambda u: fm.features(u, x, {k: b.clone() for k, b in buffers.items()}))
            data = self.mean_loss(out, y)
            total = self.program.objective(data, w, c, batch)
            direct, *grads = torch.autograd.grad(total, [w, *self.params], allow_unused=True)
        g = torch.cat([t.reshape(-1) if t is not None else p.new_zeros(p.numel())
                       for t, p in zip(grads, self.params)])
        return (g if direct is None else g + direct), data.detach()


def _owner(module: torch.nn.Module, name: str) -> tuple[torch.nn.Module, str]:
    """The submodule holding the tensor ``name`` ('a.b.running_mean'), and the tensor's own name."""
    path, _, leaf = name.rpartition(".")
    return module.get_submodule(path), leaf


class StackedGradient:
    """(∇ objective, data loss) of every client of a vmapped local step, computed for the whole stack at once: the
    stacked forward (``FlatModel.stacked``: batched matrix products and grouped convolutions for layer chains,
    vmap otherwise), the clients' objectives under an inner vmap, and ONE plain-autograd backward of their sum
    (client i's objective depends on row i only, so row i of the gradient is client i's gradient). When the
    objective is the data loss itself and the model a dense chain, ``chain_gradient`` back-propagates by hand."""

    def __init__(self, fm: FlatModel, program: ClientProgram, task: str, compile: bool = False):
        self.fm, self.program, self.per_sample = fm, program, sample_loss(task)
        self.plain: bool | None = None  # whether the objective is the data loss itself (known after one call)
        self.by_hand = fm.hand_differentiable and task == "classification"  # chain_gradient, once plain
        # compile=True: torch.compile chain_gradient, or the stacked forward and data loss (whose backward
        # AOTAutograd compiles with it); an objective's own terms stay eager
        self.chain_gradient = Compiled(partial(chain_gradient, fm), compile)
        self.forward = Compiled(self._forward, compile)

    def __call__(self, v, c, x, y, mask):
        leaves, spec = tree_flatten(c)
        return _VmapGradient.apply(self.stack, spec, v, x, y, mask, *leaves)

    def _forward(self, params, x, y, mask):
        """(each client's mean data loss over the real rows of its batch [n], the outputs, the output layer's
        inputs when the program reads them)."""
        n, b = mask.shape
        out, features = self.fm.stacked(params, x, self.program.needs_features)
        per_sample = self.per_sample(out.flatten(0, 1), y.flatten(0, 1)).view(n, b)
        return (per_sample * mask).sum(1) / mask.sum(1).clamp_min(1), out, features

    @property
    def compile_seconds(self) -> float:
        return self.chain_gradient.seconds + self.forward.seconds

    def _hands_back_data(self, v, spec, leaves, dims, x, y, mask) -> bool:
        """Whether the program's objective is the data loss itself (then no vmap over objectives is needed, and a
        dense chain is differentiated by hand), probed once on client 0 of the first stack."""
        first = tree_unflatten([t if d is None else t.select(d, 0) for t, d in zip(leaves, dims)], spec)
        out, features = self.fm.stacked(v[:1], x[:1], self.program.needs_features)
        data = self.per_sample(out[0], y[0]).mean()
        return self.objective(data, v[0], first, x[0], y[0], mask[0], out[0],
                              None if features is None else features[0]) is data

    def outside(self, v, c, x, y, mask):
        """The same for a stack outside vmap: v [n, d], c stacked, x [n, B, ...]."""
        leaves, spec = tree_flatten(c)
        dims = [0 if isinstance(t, torch.Tensor) else None for t in leaves]
        return self.stack(v, spec, leaves, dims, x, y, mask)

    def objective(self, data, w, c, x, y, mask, out, features):
        batch = Batch(x, y, mask, out, features, lambda u: self.fm.features(u, x, {}))
        return self.program.objective(data, w, c, batch)

    def stack(self, v, spec, leaves, dims, x, y, mask):
        """Gradients [n, d] and data losses [n] of n clients (rows); the clients' inputs are the pytree ``spec``
        of ``leaves``, batched along ``dims`` (None: shared)."""
        if self.plain is None:
            self.plain = self._hands_back_data(v, spec, leaves, dims, x, y, mask)
        if self.plain and self.by_hand:
            return self.chain_gradient(v, x, y, mask)
        with torch.enable_grad():
            v = v.detach().requires_grad_(True)  # the objective's own dependence on w (FedProx's term, ...)
            blocks = ([t.detach().requires_grad_(True) for t in v.split(self.fm.numels, dim=1)]
                      if self.fm.chain is not None else None)
            params = v if blocks is None else blocks
            data, out, features = self.forward(params, x, y, mask)
            if self.plain:
                total = data
            else:
                c, c_dims = tree_unflatten(leaves, spec), tree_unflatten(dims, spec)
                in_dims = (0, 0, c_dims, 0, 0, 0, 0, None if features is None else 0)
                total = vmap(self.objective, in_dims=in_dims)(data, v, c, x, y, mask, out, features)
            if blocks is None:
                (g,) = torch.autograd.grad(total.sum(), v)
            else:
                direct, *grads = torch.autograd.grad(total.sum(), [v, *blocks], allow_unused=True)
                g = torch.cat(grads, dim=1)
                g = g if direct is None else g + direct
        return g, data.detach()


class Compiled:
    """``fn``, or with ``compile`` its torch.compile (made at the first call); ``seconds`` sums the wall time of
    the calls that compiled a graph (torch._dynamo's count of graphs moved), compile and import included."""

    def __init__(self, fn: Callable, compile: bool):
        self.fn, self.compile, self.compiled, self.seconds = fn, compile, None, 0.0

    def __call__(self, *args):
        if not self.compile:
            return self.fn(*args)
        from torch._dynamo.utils import counters

        graphs, start = counters["stats"]["unique_graphs"], time.perf_counter()
        if self.compiled is None:
            self.compiled = torch.compile(self.fn)
        out = self.compiled(*args)
        if counters["stats"]["unique_graphs"] != graphs:
            self.seconds += time.perf_counter() - start
        return out


class _NotDifferentiable(torch.autograd.Function):
    """A client computation handed a whole stack under vmap (below): it is never differentiated through."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("a client's local gradient or data pass is not differentiable")


def _leading(t: torch.Tensor, dim: int | None, n: int) -> torch.Tensor:
    """t with its vmapped dimension first, or repeated for the n clients when it is shared."""
    return t.movedim(dim, 0) if dim is not None else t.expand(n, *t.shape)


class _VmapGradient(_NotDifferentiable):
    """Hands a vmapped ``grad_at(v)`` to ``StackedGradient.stack`` with the batch dimension exposed: under
    ``vmap`` PyTorch calls ``vmap`` below with the stacked tensors; alone, ``forward`` runs a stack of one."""

    @staticmethod
    def forward(stack, spec, v, x, y, mask, *leaves):
        dims = [0 if isinstance(t, torch.Tensor) else None for t in leaves]
        leaves = [t[None] if d == 0 else t for t, d in zip(leaves, dims)]
        g, data = stack(v[None], spec, leaves, dims, x[None], y[None], mask[None])
        return g[0], data[0]

    @staticmethod
    def vmap(info, in_dims, stack, spec, v, x, y, mask, *leaves):
        v, x, y, mask = (_leading(t, d, info.batch_size) for t, d in zip((v, x, y, mask), in_dims[2:6]))
        dims = [None if d is None else 0 for d in in_dims[6:]]
        leaves = [t if d is None else t.movedim(d, 0) for t, d in zip(leaves, in_dims[6:])]
        return stack(v, spec, leaves, dims, x, y, mask), (0, 0)


class ClientData:
    """``LocalData`` of an engine: passes over a client's whole training set (``c.rows`` into x, y) at v, in
    evaluation mode with the given BatchNorm statistics, in chunks. Alone, or under ``vmap`` for a stack of
    clients (an autograd.Function with a vmap rule, as in ``_VmapGradient``): each client over its real samples
    only, so a stack of unequal clients computes no padding."""

    def __init__(self, fm: FlatModel, task: str, x: torch.Tensor, y: torch.Tensor, buffers: dict | None = None,
                 chunk: int = 2048):
        self.fm, self.x, self.y, self.buffers, self.chunk = fm, x, y, buffers, chunk
        self.per_sample, self.classification = sample_loss(task), task == "classification"

    def evaluate(self, v, c):
        return _ClientPass.apply(self._evaluate, v, _rows(c))

    def gradient(self, v, c):
        return _ClientPass.apply(self._gradient, v, _rows(c))

    def _chunks(self, rows: torch.Tensor):
        rows = rows[rows >= 0]
        for start in range(0, len(rows), self.chunk):
            part = rows[start:start + self.chunk]
            yield self.x[part], self.y[part]

    def _evaluate(self, v: torch.Tensor, rows: torch.Tensor):
        losses, accuracies = [], []
        with torch.no_grad(), _eval_mode(self.fm.module):
            for w, r in zip(v, rows):
                loss, correct, count = v.new_zeros(()), v.new_zeros(()), 0
                for x, y in self._chunks(r):
                    out = self.fm(w, x, self.buffers)
                    loss += self.per_sample(out, y).sum()
                    if self.classification:
                        correct += (out.argmax(1) == y).sum()
                    count += len(y)
                losses.append(loss / count)
                accuracies.append(correct / count if self.classification else v.new_tensor(math.nan))
        return torch.stack(losses), torch.stack(accuracies)

    def _gradient(self, v: torch.Tensor, rows: torch.Tensor):
        return (torch.stack([summed_gradient(self.fm, w, self.x[r[r >= 0]], self.y[r[r >= 0]], self.per_sample,
                                             self.buffers, self.chunk) for w, r in zip(v, rows)]),)


def _rows(c) -> torch.Tensor:
    if c.rows is None:
        raise ValueError("this client has no training samples (ClientInput.rows): the engine sets them")
    return c.rows


def summed_gradient(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, per_sample: Callable,
                    buffers: dict | None = None, chunk: int = 2048) -> torch.Tensor:
    """∇_w Σ per_sample(fm(w, x), y) over (x, y) in evaluation mode, accumulated chunk by chunk."""
    w = w.detach().requires_grad_(True)
    g = torch.zeros_like(w)
    with torch.enable_grad(), _eval_mode(fm.module):
        for start in range(0, len(x), chunk):
            g += torch.autograd.grad(per_sample(fm(w, x[start:start + chunk], buffers), y[start:start + chunk]).sum(),
                                     w)[0]
    return g


@contextmanager
def _eval_mode(module: torch.nn.Module):
    """Evaluation mode inside, the previous mode after."""
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)


class _ClientPass(_NotDifferentiable):
    """``fn(v [n, d], rows [n, m])`` (a tuple of [n, ...] results) for one client, or under vmap for the stack."""

    @staticmethod
    def forward(fn, v, rows):
        out = tuple(t[0] for t in fn(v[None], rows[None]))
        return out if len(out) > 1 else out[0]

    @staticmethod
    def vmap(info, in_dims, fn, v, rows):
        v, rows = (_leading(t, d, info.batch_size) for t, d in zip((v, rows), in_dims[1:]))
        out = fn(v, rows)
        return (out, (0,) * len(out)) if len(out) > 1 else (out[0], 0)


@torch.no_grad()
def evaluate(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, task: str,
             buffers: dict | None = None, chunk: int = 2048) -> tuple[float, float]:
    """(accuracy, mean loss) of the model at w on (x, y); accuracy is NaN for objective tasks."""
    fm.module.eval()
    per_sample = sample_loss(task)
    total_loss, correct = 0.0, 0
    for start in range(0, len(x), chunk):
        out = fm(w, x[start:start + chunk], buffers)
        total_loss += per_sample(out, y[start:start + chunk]).sum().item()
        if task == "classification":
            correct += (out.argmax(1) == y[start:start + chunk]).sum().item()
    fm.module.train()
    accuracy = correct / len(x) if task == "classification" else math.nan
    return accuracy, total_loss / len(x)

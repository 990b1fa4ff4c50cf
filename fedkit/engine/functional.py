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
        self.hand_differentiable = self.chain is not None and all(  # see chain_gradient
            op != "apply" or isinstance(arg, HAND_DIFFERENTIABLE)
            or (isinstance(arg, torch.nn.LeakyReLU) and arg.negative_slope > 0) for op, arg in self.chain) and {
            i for op, arg in self.chain if op in ("linear", "conv") for i in arg[:2] if i is not None
        } == set(range(len(self.names)))  # and every parameter is in a layer of the chain
        self._run = None if self.chain is None else _pool_before_relu(self.chain)

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
        channels side by side, [B, n·C, H, W] in channels-last memory (the fastest layout on a CPU, measured); a
        ReLU followed by a max-pooling runs after it, on a quarter of the values (the same numbers, see
        ``_pool_before_relu``). ``tape`` (``chain_gradient``) collects what the backward needs: per Linear its 3-d
        input and weight, per convolution its input and grouped weight, per pooling its input (and a max-pooling's
        indices), per Flatten its input shape, per activation its output, and the layout changes."""
        h, features, n = x, None, len(x)
        grouped = False  # whether h is [B, n·C, H, W] rather than [n, B, ...]
        for op, arg in self._run:
            if op == "conv":
                weight, bias, _, layer = arg
                if not grouped:
                    if tape is not None:
                        tape.append(("group", None, h.shape, None))
                    h = h.transpose(0, 1).flatten(1, 2).contiguous(memory_format=torch.channels_last)
                    grouped = True
                weight_g = params[weight].reshape(n * layer.out_channels, *self.shapes[weight][1:])
                if tape is not None:
                    tape.append((op, arg, h, weight_g))
                h = F.conv2d(h, weight_g, None if bias is None else params[bias].reshape(-1), layer.stride,
                             layer.padding, layer.dilation, groups=n)
                continue
            if op == "pool":
                inp = h if grouped else h.flatten(0, 1)
                if tape is None:
                    out = arg(inp)
                else:
                    out, indices = _pool_forward(arg, inp)
                    tape.append((op, arg, inp, indices))
                h = out if grouped else out.unflatten(0, (n, -1))
                continue
            if op == "apply" and grouped:
                h = arg(h)
                if tape is not None:
                    tape.append((op, arg, h, None))
                continue
            if op == "permute":  # each sample's [C, H, W] to [H, W, C]: [n, B, H, W, C]
                if tape is not None:
                    tape.append((op, arg, grouped, None))
                h = h.unflatten(1, (n, -1)).permute(1, 0, 3, 4, 2) if grouped else h.permute(0, 1, 3, 4, 2)
                grouped = False
                continue
            if grouped:  # back to [n, B, C, H, W]
                if tape is not None:
                    tape.append(("ungroup", None, h.shape, None))
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
            if tape is not None:
                tape.append(("ungroup", None, h.shape, None))
            h = h.unflatten(1, (n, -1)).transpose(0, 1)
        return h, features


def _pool_before_relu(chain: list) -> list:
    """The chain with every ReLU that a MaxPool2d follows moved after it: max-pooling commutes with ReLU (both
    orders give the same values, and the same gradient: the window's first maximum, or zero where it is not
    positive), and the ReLU and its backward then touch a quarter of the values."""
    run = list(chain)
    for i in range(len(run) - 1):
        (op, arg), (next_op, next_arg) = run[i], run[i + 1]
        if (op == "apply" and type(arg) is torch.nn.ReLU and next_op == "pool"
                and type(next_arg) is torch.nn.MaxPool2d):
            run[i], run[i + 1] = run[i + 1], run[i]
    return run


def _pool_forward(layer: torch.nn.Module, h: torch.Tensor):
    """(output, indices for the backward: a max-pooling's, else None) of a 2-d pooling layer."""
    if isinstance(layer, torch.nn.MaxPool2d):
        return F.max_pool2d(h, layer.kernel_size, layer.stride, layer.padding, layer.dilation, layer.ceil_mode,
                            return_indices=True)
    if isinstance(layer, torch.nn.AdaptiveMaxPool2d):
        return F.adaptive_max_pool2d(h, layer.output_size, return_indices=True)
    return layer(h), None


def _pool_backward(layer: torch.nn.Module, grad: torch.Tensor, h: torch.Tensor, indices) -> torch.Tensor:
    """grad through a 2-d pooling layer of input h (the kernels autograd calls)."""
    aten = torch.ops.aten
    if isinstance(layer, torch.nn.AdaptiveAvgPool2d):
        return aten._adaptive_avg_pool2d_backward(grad, h)
    if isinstance(layer, torch.nn.AdaptiveMaxPool2d):
        return aten.adaptive_max_pool2d_backward(grad, h, indices)
    kernel = _pair(layer.kernel_size)
    stride = _pair(layer.stride) if layer.stride else kernel
    if isinstance(layer, torch.nn.MaxPool2d):
        return aten.max_pool2d_with_indices_backward(grad, h, kernel, stride, _pair(layer.padding),
                                                     _pair(layer.dilation), layer.ceil_mode, indices)
    return aten.avg_pool2d_backward(grad, h, kernel, stride, _pair(layer.padding), layer.ceil_mode,
                                    layer.count_include_pad, layer.divisor_override)


def _spread_through(layer: torch.nn.Module, below: tuple, h: torch.Tensor) -> bool:
    """Whether an average pooling's backward can be folded into the backward of the activation below it: windows
    that tile the input exactly (stride = kernel, no padding, sizes divisible), an activation with a backward
    from its output whose output is the pooling's channels-last input."""
    if type(layer) is not torch.nn.AvgPool2d or below[0] != "apply" or below[2] is not h:
        return False
    if not isinstance(below[1], (torch.nn.ReLU, torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.LeakyReLU)):
        return False
    kernel = _pair(layer.kernel_size)
    return ((_pair(layer.stride) if layer.stride else kernel) == kernel and _pair(layer.padding) == [0, 0]
            and h.shape[2] % kernel[0] == 0 and h.shape[3] % kernel[1] == 0 and h.dim() == 4
            and h.is_contiguous(memory_format=torch.channels_last))


def _average_and_activation_backward(layer: torch.nn.AvgPool2d, activation: torch.nn.Module, grad: torch.Tensor,
                                     out: torch.Tensor) -> torch.Tensor:
    """grad through an activation (output ``out``, [B, C, H, W] channels-last) and the tiling average pooling
    above it, in one pass: each window's gradient / its size, broadcast over the window, times the activation's
    derivative. The same numbers as the pooling's backward kernel then the activation's (which divides, and adds
    each value to a zero), without writing the pooling's full-size gradient."""
    kh, kw = _pair(layer.kernel_size)
    B, C, H, W = out.shape
    divisor = layer.divisor_override or kh * kw
    spread = (grad / divisor).permute(0, 2, 3, 1)[:, :, None, :, None, :]  # [B, H/kh, 1, W/kw, 1, C]
    d = _activation_backward(activation, spread, out.permute(0, 2, 3, 1).view(B, H // kh, kh, W // kw, kw, C))
    return d.view(B, H, W, C).permute(0, 3, 1, 2)


def _pair(v) -> list[int]:
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def chain_gradient(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """(∇ data loss [n, d], data loss [n]) of n layer-chain classifiers (rows of w) on their batches, the loss
    being each client's masked mean cross-entropy, back-propagated by hand (``fm.hand_differentiable``) with the
    kernels autograd calls (batched matrix products; for convolutions and poolings their own backward kernels,
    on the grouped stack): the same numbers as autograd without its graph, and nothing computed that no
    gradient needs (the input's gradient of the first layer)."""
    params = w.split(fm.numels, dim=1)
    n, b = mask.shape
    tape = []
    h, _ = fm._chain(params, x, tape)  # the forward, keeping what the backward needs
    log_p = torch.log_softmax(h.view(n, b, -1), dim=2)
    scale = (mask / mask.sum(1, keepdim=True).clamp_min(1)).unsqueeze(2)  # d(mean over real rows)/d(row)
    picked = log_p.gather(2, y.view(n, b, 1))
    data = -(picked * scale).sum((1, 2))
    delta = log_p.exp_().scatter_add_(2, y.view(n, b, 1), torch.full_like(picked, -1.0)).mul_(scale)  # ∂/∂logits
    delta = delta.view(h.shape)
    grads = [None] * len(params)
    first = next(i for i, (op, *_) in enumerate(tape) if op in ("linear", "conv"))  # no gradient is needed below
    grouped = False  # whether delta is [B, n·C, H, W] (walking back from the output: the layout changes flip it)
    done = False  # whether tape[i] was back-propagated with the step above it (an average pooling's activation)
    for i in range(len(tape) - 1, first - 1, -1):
        op, arg, saved, extra = tape[i]
        if done:
            done = False
            continue
        if op == "linear":
            weight, bias, _, _ = arg
            delta3 = delta.reshape(n, -1, delta.shape[-1])
            grads[weight] = torch.bmm(delta3.transpose(1, 2), saved).view(n, -1)
            if bias is not None:
                grads[bias] = delta3.sum(1)
            if i == first:
                break
            delta = torch.bmm(delta3, extra).view(*delta.shape[:-1], saved.shape[-1])
        elif op == "conv":
            weight, bias, _, layer = arg
            d_input, grads[weight], d_bias = torch.ops.aten.convolution_backward(
                delta, saved, extra, None if bias is None else [extra.shape[0]], list(layer.stride),
                list(layer.padding), list(layer.dilation), False, [0, 0], n, [i > first, True, bias is not None])
            grads[weight] = grads[weight].reshape(n, -1)
            if bias is not None:
                grads[bias] = d_bias.view(n, -1)
            if i == first:
                break
            delta = d_input
        elif op == "pool":
            below = tape[i - 1] if i - 1 > first else None
            if grouped and below is not None and _spread_through(arg, below, saved):
                delta, done = _average_and_activation_backward(arg, below[1], delta, saved), True
            elif grouped:
                delta = _pool_backward(arg, delta, saved, extra)
            else:
                delta = _pool_backward(arg, delta.flatten(0, 1), saved, extra).unflatten(0, (n, -1))
        elif op == "ungroup":  # [n, B, C, H, W] back to [B, n·C, H, W], channels-last
            B, C, H, W = saved
            out = delta.new_empty(B, H, W, n, C // n)
            out.copy_(delta.permute(1, 3, 4, 0, 2))
            delta = out.view(B, H, W, C).permute(0, 3, 1, 2)
            grouped = True
        elif op == "group":
            delta = delta.unflatten(1, (n, -1)).transpose(0, 1)
            grouped = False
        elif op == "permute":  # [n, B, H, W, C] back to [B, n·C, H, W] (channels-last), or to [n, B, C, H, W]
            if saved:
                _, B, H, W, C = delta.shape
                out = delta.new_empty(B, H, W, n, C)
                out.copy_(delta.permute(1, 2, 3, 0, 4))
                delta = out.view(B, H, W, n * C).permute(0, 3, 1, 2)
                grouped = True
            else:
                delta = delta.permute(0, 1, 4, 2, 3)
        elif op == "flatten":
            delta = delta.reshape(saved)
        else:
            delta = _activation_backward(arg, delta, saved)
    return torch.cat(grads, dim=1), data


def _activation_backward(layer: torch.nn.Module, grad: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """grad through an elementwise activation, from its output (the kernels autograd calls)."""
    aten = torch.ops.aten
    if isinstance(layer, torch.nn.ReLU):
        return aten.threshold_backward(grad, out, 0)
    if isinstance(layer, torch.nn.Tanh):
        return aten.tanh_backward(grad, out)
    if isinstance(layer, torch.nn.Sigmoid):
        return aten.sigmoid_backward(grad, out)
    if isinstance(layer, torch.nn.LeakyReLU):
        return aten.leaky_relu_backward(grad, out, layer.negative_slope, True)
    return grad  # Identity


HAND_DIFFERENTIABLE = (torch.nn.ReLU, torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.Identity)  # from the output alone


ELEMENTWISE = (torch.nn.ReLU, torch.nn.LeakyReLU, torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.GELU, torch.nn.ELU,
               torch.nn.SiLU, torch.nn.Identity)
POOLING = (torch.nn.MaxPool2d, torch.nn.AvgPool2d, torch.nn.AdaptiveAvgPool2d, torch.nn.AdaptiveMaxPool2d)


def layer_chain(module: torch.nn.Module, layout: Layout) -> list | None:
    """The model as a chain of Linear and Conv2d layers, 2-d pooling, Flatten, elementwise activations (modules, or
    torch.tanh / relu / sigmoid) and the move of the channels last (``permute(0, 2, 3, 1)``, before a per-position
    Linear), read from its torch.fx graph, which ``FlatModel.stacked`` runs for a stack of models as batched matrix
    products and grouped convolutions; None for any other model."""
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
        if not node.args or node.args[0] is not previous or node.kwargs:
            return None
        if node.op in ("call_function", "call_method"):  # x.permute(0, 2, 3, 1), torch.tanh(x), ...
            step = _functional_step(node)
            if step is None:
                return None
            chain.append(step)
            previous = node
            continue
        if node.op != "call_module" or len(node.args) != 1:
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


CHANNELS_LAST = (0, 2, 3, 1)  # x.permute(0, 2, 3, 1): a per-position layer follows (FedDUAL's LeNet)
FUNCTIONAL_ACTIVATIONS = {torch.tanh: torch.nn.Tanh, torch.relu: torch.nn.ReLU, torch.sigmoid: torch.nn.Sigmoid,
                          F.relu: torch.nn.ReLU, F.tanh: torch.nn.Tanh, F.sigmoid: torch.nn.Sigmoid,
                          "tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "sigmoid": torch.nn.Sigmoid}


def _functional_step(node) -> tuple | None:
    """A chain step for a function or method node of the traced graph: an elementwise activation, or the move of
    the channels last (``permute(0, 2, 3, 1)``); None for anything else."""
    if node.op == "call_method" and node.target == "permute":
        dims = node.args[1:]
        dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else tuple(dims)
        return ("permute", CHANNELS_LAST) if dims == CHANNELS_LAST else None
    activation = FUNCTIONAL_ACTIVATIONS.get(node.target) if len(node.args) == 1 else None
    return None if activation is None else ("apply", activation())


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

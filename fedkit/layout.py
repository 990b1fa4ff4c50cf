"""Where each parameter tensor sits in the flat vector, and selections of tensors by name, module type or position.

A selection ``spec`` is one of, or a list of (their union):
  "all"          every trainable tensor
  "output"       the tensors of the last parameterised layer (the classifier's output layer)
  "head"         the trailing run of Linear layers (e.g. a CNN's fully connected head; FedPVR's "final layers")
  "last:N"       the tensors of the last N parameterised layers
  "batchnorm"    the affine tensors of every BatchNorm layer (by module type, not by name)
  a glob         tensor names matching it, e.g. "classifier.4.*" or "*.bias"
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass

import torch
from torch import nn

from .errors import ConfigError

Selection = str | list[str]  # the type of an option that selects tensors (a spec above, or a list of them)


@dataclass(frozen=True)
class Entry:
    name: str
    shape: tuple[int, ...]
    start: int  # offset in the flat vector
    layer: str  # name of the module that owns it
    kind: type  # that module's type

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + math.prod(self.shape))


class Layout:
    """The trainable tensors of a module in flat-vector order (the order of ``named_parameters``)."""

    def __init__(self, module: nn.Module):
        owners = {f"{layer}.{n}" if layer else n: (layer, type(m))
                  for layer, m in module.named_modules() for n, _ in m.named_parameters(recurse=False)}
        self.tensors, start = [], 0
        for name, p in module.named_parameters():
            if p.requires_grad:
                self.tensors.append(Entry(name, tuple(p.shape), start, *owners[name]))
                start += p.numel()
        self.dim = start
        self.layers = list(dict.fromkeys(t.layer for t in self.tensors))

    @property
    def batchnorm(self) -> list[Entry]:
        """The affine tensors of every BatchNorm layer (by module type)."""
        return [t for t in self.tensors if issubclass(t.kind, nn.modules.batchnorm._BatchNorm)]

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tensors]

    def select(self, spec: Selection, what: str = "layer selection") -> list[Entry]:
        """The tensors a spec names, in flat order; a spec that selects nothing is an error naming it (and ``what``
        the spec is, e.g. an algorithm's option)."""
        specs = [spec] if isinstance(spec, str) else list(spec)
        chosen = set()
        for s in specs:
            found = self._one(s, what)
            if not found:
                raise ConfigError(f"{what} {s!r} matches no parameter tensor; tensors: {self.names}")
            chosen |= {t.name for t in found}
        return [t for t in self.tensors if t.name in chosen]

    def _one(self, spec: str, what: str) -> list[Entry]:
        if not isinstance(spec, str):
            raise ConfigError(f"{what} must be a string or a list of strings, got {spec!r}")
        if spec == "all":
            return self.tensors
        if spec == "output":
            return self._layers(self.layers[-1:])
        if spec.startswith("last:"):
            count = spec[5:]
            if not count.isdigit() or not 1 <= int(count) <= len(self.layers):
                raise ConfigError(f"{what} {spec!r}: 'last:N' needs an integer N in [1, {len(self.layers)}] (the "
                                  f"model's parameterised layers: {', '.join(self.layers)})")
            return self._layers(self.layers[-int(count):])
        if spec == "head":
            kinds = {t.layer: t.kind for t in self.tensors}
            head = []
            for layer in reversed(self.layers):
                if not issubclass(kinds[layer], nn.Linear):
                    break
                head.insert(0, layer)
            return self._layers(head)
        if spec == "batchnorm":
            return self.batchnorm
        return [t for t in self.tensors if fnmatch.fnmatchcase(t.name, spec)]

    def _layers(self, layers) -> list[Entry]:
        return [t for t in self.tensors if t.layer in layers]

    @staticmethod
    def coordinates(entries: list[Entry], device=None) -> torch.Tensor:
        """The flat coordinates of ``entries`` (int64, in their order)."""
        ranges = [torch.arange(t.slice.start, t.slice.stop, device=device) for t in entries]
        return torch.cat(ranges) if ranges else torch.zeros(0, dtype=torch.long, device=device)

    def mask(self, spec: Selection, device=None, what: str = "layer selection") -> torch.Tensor:
        """Boolean [dim] mask of the selected coordinates of the flat vector."""
        mask = torch.zeros(self.dim, dtype=torch.bool, device=device)
        for t in self.select(spec, what):
            mask[t.slice] = True
        return mask

"""Name → constructor registries whose lookups and keyword checks fail with messages naming the bad value."""
from __future__ import annotations

import inspect
from collections.abc import Callable

from .errors import ConfigError


def build(kind: str, registry: dict[str, Callable], name: str, fixed: dict | None = None, **options):
    """Call ``registry[name](**fixed, **options)`` after checking the name and the user's option names
    (``fixed`` are arguments the caller supplies itself, e.g. a model's input shape)."""
    if name not in registry:
        raise ConfigError(f"unknown {kind} {name!r}; known: {', '.join(sorted(registry))}")
    fixed = fixed or {}
    factory = registry[name]
    params = inspect.signature(factory).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        accepted = [n for n, p in params.items()
                    if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n not in fixed]
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise ConfigError(f"unknown option(s) {unknown} for {kind} {name!r}; accepted: {accepted}")
    return factory(**fixed, **options)

"""Name → constructor registries. A user's options are checked against the constructor's annotations, so every
hyper-parameter of every algorithm, optimizer, schedule and threat is typed and range-checked in one place:

    mu: Annotated[float, "[0, inf)"] = 0.1          a finite number ≥ 0 (YAML's '1e-3' string is read as 1e-3)
    kappa: Annotated[float, "[0, 1]"] = 0.6          an interval, open or closed at either end
    prox: Literal["paper", "code"] = "paper"         one of the listed values
    detect: bool = True                              true or false, never a string
"""
from __future__ import annotations

import difflib
import inspect
import math
import numbers
import types
import typing
from collections.abc import Callable
from typing import Annotated, Literal

from .errors import ConfigError


def is_real(x) -> bool:
    """A finite real number (numpy scalars included), not a bool."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def is_int(x) -> bool:
    """An integer (numpy integers included), not a bool."""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def build(kind: str, registry: dict[str, Callable], name: str, fixed: dict | None = None, **options):
    """Call ``registry[name](**fixed, **options)`` after checking the name, the user's option names and their values
    against the annotations (``fixed`` are arguments the caller supplies itself, e.g. a model's input shape)."""
    if not isinstance(name, str) or name not in registry:
        raise ConfigError(f"unknown {kind} {name!r}; known: {', '.join(sorted(registry))}")
    fixed = fixed or {}
    factory = registry[name]
    params = inspect.signature(factory).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        accepted = [n for n, p in params.items()
                    if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n not in fixed]
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            hint = difflib.get_close_matches(unknown[0], accepted, n=1)
            raise ConfigError(f"unknown option(s) {unknown} for {kind} {name!r}"
                              f"{f' (did you mean {hint[0]!r}?)' if hint else ''}; accepted: {accepted}")
    hints = _hints(factory)
    checked = {key: check(f"{kind} {name!r}: {key}", value, hints[key]) if key in hints else value
               for key, value in options.items()}
    return factory(**fixed, **checked)


def _hints(factory) -> dict:
    target = factory.__init__ if isinstance(factory, type) else factory
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError):  # an annotation that cannot be resolved is not checked
        return {}


def check(what: str, value, hint):
    """``value`` converted to what ``hint`` describes, or ConfigError naming ``what`` and the value."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        checked = check(what, value, args[0])
        for rule in args[1:]:
            if isinstance(rule, str) and checked is not None and not _inside(checked, rule):
                raise ConfigError(f"{what} must lie in {rule}, got {value!r}")
        return checked
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return check(what, value, option)
            except ConfigError as err:
                errors.append(err)
        raise errors[0] if len(options) == 1 else ConfigError(f"{what} got {value!r}, which is none of {hint}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{what} must be one of {', '.join(map(repr, args))}, got {value!r}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{what} must be true or false, got {value!r}")
        return value
    if hint in (int, float):
        return _number(what, value, hint)
    if hint is str and not isinstance(value, str):
        raise ConfigError(f"{what} must be a string, got {value!r}")
    base = origin or hint
    if isinstance(base, type) and base in (list, tuple, dict) and not isinstance(value, (list, tuple, dict)):
        raise ConfigError(f"{what} must be a {base.__name__}, got {value!r}")
    return value


def _number(what: str, value, kind: type):
    """An int, or a finite float (a string such as '1e-3', which YAML 1.1 leaves unread, is converted)."""
    if isinstance(value, str):
        try:
            value = float(value) if kind is float else int(value)
        except ValueError:
            kind_name = "a number" if kind is float else "an integer"
            raise ConfigError(f"{what} must be {kind_name}, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise ConfigError(f"{what} must be {'a number' if kind is float else 'an integer'}, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{what} must be finite, got {value!r}")
    return float(value) if kind is float else value


def _inside(value: float, interval: str) -> bool:
    """Whether ``value`` lies in an interval written like '[0, 1)' or '(0, inf)'."""
    low, high = (float(bound) for bound in interval[1:-1].split(","))
    above = value >= low if interval[0] == "[" else value > low
    below = value <= high if interval[-1] == "]" else value < high
    return above and below

"""Input-shape checks shared by the models: each builder states the shape it expects in its error."""
from __future__ import annotations

from collections.abc import Sequence
from math import prod

from fedkit.errors import ConfigError

# A conv/pool layer's effect on one spatial side: (kernel, stride, padding, ceil_mode).
Layer = tuple[int, int, int, bool]


def as_shape(model: str, input_shape) -> tuple[int, ...]:
    """input_shape as a tuple of positive ints (one sample, without the batch dimension)."""
    if not isinstance(input_shape, Sequence) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in input_shape
    ):
        raise ConfigError(
            f"model {model!r}: input_shape must be a tuple of positive ints, got {input_shape!r}"
        )
    return tuple(input_shape)


def flat_features(model: str, input_shape) -> int:
    """Number of features of a sample of any shape once flattened."""
    shape = as_shape(model, input_shape)
    if not shape:
        raise ConfigError(f"model {model!r} expects a non-empty input_shape, got {input_shape!r}")
    return prod(shape)


def side_after(size: int, layers: Sequence[Layer]) -> int:
    """Length of one spatial side after ``layers`` (PyTorch's conv/pool size rule); 0 if it vanishes."""
    for kernel, stride, padding, ceil_mode in layers:
        span = size + 2 * padding - kernel
        if span < 0:
            return 0
        size = (-(-span // stride) if ceil_mode else span // stride) + 1
    return size


def image_shape(
    model: str, input_shape, layers: Sequence[Layer], example: str, channels: int | None = None
) -> tuple[int, int, int]:
    """Check a (C, H, W) input_shape; return (C, h, w) with h, w the spatial size after ``layers``."""
    shape = as_shape(model, input_shape)
    if len(shape) == 3 and (channels is None or shape[0] == channels):
        h, w = side_after(shape[1], layers), side_after(shape[2], layers)
        if h > 0 and w > 0:
            return shape[0], h, w
    min_side = next(s for s in range(1, 100_000) if side_after(s, layers) > 0)
    c = "C" if channels is None else str(channels)
    raise ConfigError(
        f"model {model!r} expects input_shape ({c}, H, W) with H, W >= {min_side}, e.g. {example}; "
        f"got {input_shape!r}"
    )

"""Config fields written as YAML: a config file (``fedkit run --config``, the Flower App's ``fedkit-config``) and
option values. A bad file or value raises ConfigError in one line naming it."""
from __future__ import annotations

import typing
from pathlib import Path

import yaml

from .config import Config
from .errors import ConfigError

# YAML 1.1 reads 1e-3 as a string: these fields (float in Config's type hints) get such strings as numbers.
FLOAT_FIELDS = {name for name, hint in typing.get_type_hints(Config).items()
                if float in (hint, *typing.get_args(hint))}


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that sets a key twice (PyYAML would silently keep the last value)."""

    def construct_mapping(self, node, deep=False):
        lines = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # merge keys (<<) may be overridden by the mapping's own keys
            key = self.construct_object(key_node)
            if key in lines:
                raise yaml.constructor.ConstructorError(
                    problem=f"key {key!r} is set twice (first on line {lines[key]})", problem_mark=key_node.start_mark)
            lines[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def read_yaml(text: str, what: str):
    """``text`` parsed as YAML; a syntax error or a key set twice names ``what`` and the place."""
    try:
        return yaml.load(text, _UniqueKeyLoader)  # a safe loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        detail = str(e).splitlines()[0] if mark is None else \
            f"{e.problem or e.context} (line {mark.line + 1}, column {mark.column + 1})"
        raise ConfigError(f"{what} is not valid YAML: {detail}") from None


def read_fields(path: str | Path) -> dict:
    """The config fields of a YAML file (an empty file has none)."""
    try:
        source = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read config file {str(path)!r}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {str(path)!r} is not UTF-8 text (byte {e.object[e.start]:#04x} "
                          f"at position {e.start}): is it a binary file?") from None
    values = read_yaml(source, f"config file {str(path)!r}")
    if not isinstance(values, dict | None):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of config fields "
                          f"(field: value lines), got a {type(values).__name__}")
    return values or {}


def as_number(value):
    """``value``, or the float a numeric-looking string reads as (YAML 1.1 reads 1e-3 as a string)."""
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        return value


def config_from(values: dict) -> Config:
    """The Config of config fields read from YAML (numbers in YAML 1.1 strings read as numbers)."""
    return Config.from_dict({**values, **{name: as_number(values[name]) for name in FLOAT_FIELDS & values.keys()}})


def load_config(path: str | Path) -> Config:
    """The Config of a YAML file of config fields, read as ``fedkit run --config`` reads it."""
    return config_from(read_fields(path))

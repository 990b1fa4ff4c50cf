"""Readers of LEAF's json shards (Caldas et al. 2018): FEMNIST images and Shakespeare next-character data.

A shard is ``{"users": [...], "num_samples": [...], "user_data": {user: {"x": [...], "y": [...]}}}``. Sample
counts come from the lists themselves: LEAF does not update ``num_samples`` after its train/test split.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import DataFileError

# LEAF's Shakespeare vocabulary (ALL_LETTERS of its language_utils.py), 80 characters.
ALL_LETTERS = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
# A character outside the vocabulary gets the last index: LEAF's ALL_LETTERS.find() returns -1 for it,
# which its one-hot/index code then resolves to the last position ("}").
UNKNOWN_INDEX = len(ALL_LETTERS) - 1


def read_shards(directory: Path) -> list[tuple[str, list, list]]:
    """(user, xs, ys) for every user of every ``*.json`` shard in ``directory``, shards in name order.

    A shard that is not JSON or not shaped like a LEAF shard raises DataFileError naming it."""
    out = []
    for path in sorted(directory.glob("*.json")):
        try:
            shard = json.loads(path.read_bytes())
        except (OSError, ValueError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise DataFileError(f"{path} is not valid JSON ({e})") from None
        if not isinstance(shard, dict):
            raise DataFileError(f"{path} is not a LEAF shard (a JSON object with users and user_data)")
        try:
            for user in shard["users"]:
                data = shard["user_data"][user]
                if len(data["x"]) != len(data["y"]):
                    raise DataFileError(f"{path}: user {user!r} has {len(data['x'])} x but {len(data['y'])} y")
                out.append((user, data["x"], data["y"]))
        except (KeyError, TypeError) as e:
            raise DataFileError(f"{path} is not a LEAF shard (missing or malformed {e})") from None
    return out


def user_ids(train: list[tuple[str, list, list]]) -> np.ndarray:
    """Integer user id of every training sample, users numbered in order of first appearance."""
    ids: dict[str, int] = {}
    return np.array([ids.setdefault(u, len(ids)) for u, _, ys in train for _ in ys], dtype=np.int64)


def femnist_arrays(shards: list[tuple[str, list, list]]) -> tuple[np.ndarray, np.ndarray]:
    """Images float32 [n, 1, 28, 28] with values as LEAF stores them (1.0 = white background) and labels."""
    bad = next((user for user, user_xs, _ in shards for x in user_xs if not isinstance(x, list) or len(x) != 784),
               None)
    if bad is not None:
        raise DataFileError(f"user {bad!r} has a sample that is not a list of 784 pixel values")
    xs = [x for _, user_xs, _ in shards for x in user_xs]
    y = np.array([y for _, _, user_ys in shards for y in user_ys], dtype=np.int64)
    return np.asarray(xs, dtype=np.float32).reshape(-1, 1, 28, 28), y


_TABLE = np.full(max(map(ord, ALL_LETTERS)) + 2, UNKNOWN_INDEX, dtype=np.int64)  # code point -> index
_TABLE[[ord(c) for c in ALL_LETTERS]] = np.arange(len(ALL_LETTERS))


def encode(text: str) -> np.ndarray:
    """Vocabulary indices (int64) of the characters of ``text``."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    return _TABLE[np.minimum(codes, len(_TABLE) - 1)]


def shakespeare_arrays(shards: list[tuple[str, list, list]]) -> tuple[np.ndarray, np.ndarray]:
    """Character ids int64 [n, L] of the inputs (all of one length L, 80 in LEAF) and [n] of the targets."""
    xs = [x for _, user_xs, _ in shards for x in user_xs]
    lengths = {len(x) for x in xs}
    if len(lengths) > 1:
        raise DataFileError(f"Shakespeare inputs must all have one length, got lengths {sorted(lengths)[:5]}")
    seq_len = lengths.pop() if lengths else 80
    ys = "".join(y for _, _, user_ys in shards for y in user_ys)
    if len(ys) != len(xs):
        raise DataFileError("Shakespeare targets must be single characters")
    return encode("".join(xs)).reshape(len(xs), seq_len), encode(ys)

"""Lesson 08 (from simulation to Flower): the exercise's checker.

Exercise: on Flower, every round is a message to each sampled client and a reply, and fedkit counts the bytes they
carry. Predict what one SCAFFOLD client downloads and uploads per round for a model of P float32 parameters, and
check the prediction against a run's history.
"""
from __future__ import annotations

from ..history import History
from . import check, is_whole, require, shown

FLOAT32 = 4  # bytes per parameter
MAX_BYTES = 2**63 - 1  # a count of bytes fits in an int64
TASK = "predict the bytes one SCAFFOLD client downloads and uploads per round, as answer = (down, up)."
HINT = ("the model has P = histories['Flower simulation'].weights.numel() parameters; list what travels each way "
        "(the text above says).")


def measured(history) -> tuple[int, int]:
    """(bytes down, bytes up) of one client in one round of ``history``; every client and round must agree."""
    clients = history.clients
    down, up = clients["bytes_down"].unique(), clients["bytes_up"].unique()
    if len(down) != 1 or len(up) != 1:
        raise ValueError(f"clients' traffic differs between clients or rounds: down {sorted(down)}, up {sorted(up)}")
    return int(down[0]), int(up[0])


def reference(history) -> tuple[int, int]:
    """SCAFFOLD's traffic from the model's size: the model and c go down, Δy_i and Δc_i come back."""
    size = FLOAT32 * history.weights.numel()
    return 2 * size, 2 * size


def check_exercise(answer: tuple[int, int] | None, history) -> None:
    """The exercise (see :func:`fedkit.course.check`): ``answer`` = (bytes down, bytes up) per client and round, as
    the SCAFFOLD run ``history`` carried them."""
    if not isinstance(history, History):
        raise ValueError(f"history must be a fedkit History (the notebook's Flower run), got {shown(history)}")
    if history.config["algorithm"] != "scaffold":
        raise ValueError(f"the exercise is about SCAFFOLD's messages, got a {history.config['algorithm']!r} run")

    def judge(answer) -> str:
        require(isinstance(answer, tuple | list) and len(answer) == 2
                and all(is_whole(b) and 0 <= b <= MAX_BYTES for b in answer),
                f"answer with two whole numbers of bytes, (down, up), each in [0, 2**63), got {shown(answer)}")
        down, up = measured(history)
        params = history.weights.numel()
        for name, guess, real in (("down", answer[0], down), ("up", answer[1], up)):
            hint = (f"bytes, not numbers: each of the {params} parameters is a float32 of {FLOAT32} bytes"
                    if guess * FLOAT32 in (real, real // 2) else
                    "SCAFFOLD sends more than the model: what else does a client receive (down) or return (up)?")
            require(guess == real, f"{name}: you predicted {guess} bytes, the run carried {real}; {hint}")
        return f"{down} bytes down and {up} up per client and round ({params} parameters)"

    check(answer, reference(history), judge, TASK, HINT, "a pair of whole numbers (bytes down, bytes up)")

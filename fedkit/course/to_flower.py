"""Lesson 08 (from simulation to Flower): the checkers of the lesson's two exercises (``check_exercise`` with the
notebook's Flower history, ``check_exercise_2`` with its Config).

Exercise 1 (read off the lesson): on Flower, every round is a message to each sampled client and a reply, and fedkit
counts the bytes they carry. Predict what one SCAFFOLD client downloads and uploads per round for a model of P float32
parameters.
Solution: (2 · 4P, 2 · 4P) = (19,280, 19,280) bytes for the lesson's MLP (P = 2,410): x_t and c go down, Δy_i and
Δc_i come back, each P float32 of 4 bytes.

Exercise 2 (reasoning): predict the same for FedAvg-M (lesson 4) on the same model: (down, up) per client and round.
Solution: (2 · 4P, 4P) = (19,280, 9,640) bytes. Each local step mixes in u_t, so u_t travels with x_t; the client
returns only Δy_i, from which the server computes u_{t+1} itself (a mean gradient), so nothing else comes back. Unlike
SCAFFOLD, FedAvg-M keeps no state on the clients: a SuperNode may forget everything between rounds. The check runs one
round in fedkit's simulator, which counts the same messages as Flower.
"""
from __future__ import annotations

from ..config import Config
from ..federation import Federation
from ..history import History
from ..runner import run
from . import check, is_whole, need_config, require, shown

FLOAT32 = 4  # bytes per parameter
MAX_BYTES = 2**63 - 1  # a count of bytes fits in an int64
TASKS = {1: "predict the bytes one SCAFFOLD client downloads and uploads per round, as answer = (down, up).",
         2: "predict the bytes one FedAvg-M client (lesson 4) downloads and uploads per round on the same model, as "
            "answer = (down, up)."}
HINTS = {1: "the model has P = histories['Flower simulation'].weights.numel() parameters; list what travels each way "
            "(the text above says).",
         2: "what does a FedAvg-M client need for its local steps besides x_t, and what can the server compute itself "
            "from the replies?"}
FORM = "a pair of whole numbers (bytes down, bytes up)"
WHY = {1: dict.fromkeys(("down", "up"), "SCAFFOLD sends more than the model: what else does a client receive (down) or "
                                        "return (up)?"),
       2: {"down": "what does a FedAvg-M client mix into every local step, and who sends it?",
           "up": "what can the server compute itself from the model updates?"}}  # a wrong count's hint, per direction


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
    """Exercise 1 (see :func:`fedkit.course.check`): ``answer`` = (bytes down, bytes up) per client and round, as
    the SCAFFOLD run ``history`` carried them."""
    if not isinstance(history, History):
        raise ValueError(f"history must be a fedkit History (the notebook's Flower run), got {shown(history)}")
    if history.config["algorithm"] != "scaffold":
        raise ValueError(f"the exercise is about SCAFFOLD's messages, got a {history.config['algorithm']!r} run")

    check(answer, reference(history), lambda a: judge(a, lambda: history, WHY[1]), TASKS[1], HINTS[1], FORM)


def judge(answer, history_of, why) -> str:
    """Compare ``answer`` = (down, up) with the bytes per client and round of the run ``history_of()`` returns (called
    once the answer's form is checked); ``why``: the hint for a wrong count, per direction."""
    require(isinstance(answer, tuple | list) and len(answer) == 2
            and all(is_whole(b) and 0 <= b <= MAX_BYTES for b in answer),
            f"answer with two whole numbers of bytes, (down, up), each in [0, 2**63), got {shown(answer)}")
    history = history_of()
    down, up = measured(history)
    params = history.weights.numel()
    for name, guess, real in (("down", answer[0], down), ("up", answer[1], up)):
        hint = (f"bytes, not numbers: each of the {params} parameters is a float32 of {FLOAT32} bytes"
                if guess * FLOAT32 in (real, real // 2) else why[name])
        require(guess == real, f"{name}: you predicted {guess} bytes, the run carried "
                               f"{'more' if real > guess else 'fewer'}; {hint}")
    return f"{down} bytes down and {up} up per client and round ({params} parameters)"


def check_exercise_2(answer: tuple[int, int] | None, cfg: Config) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): ``answer`` = (bytes down, bytes up) per client and round of
    FedAvg-M on ``cfg``'s model and data (the notebook's Config), as one round in fedkit's simulator carries them."""
    need_config("cfg", cfg)
    fedavg_m = cfg.replace(algorithm="fedavg_m", algorithm_args={}, rounds=1)  # ConfigError, a ValueError
    size = FLOAT32 * Federation(cfg).fm.dim  # u_t and x_t go down, Δy_i comes back
    check(answer, (2 * size, size), lambda a: judge(a, lambda: run(fedavg_m, progress=False), WHY[2]), TASKS[2],
          HINTS[2], FORM)

"""Lesson 03 (control variates): SCAFFOLD's correction on the quadratic federation of lesson 02, how a too strong
(or stale) correction over-corrects, and the checkers of the lesson's two exercises (``check_exercise`` and
``check_exercise_2``, each on that federation).

Exercise 1 (write an equation): write eq. (2), SCAFFOLD's control-variate update c_i⁺ (option II), as
new_control_variate(c_i, c, x, y, steps, lr).
Solution: ``return c_i - c + (x - y) / (steps * lr)``: (x − y)/(K η_l) is the client's mean gradient along its K
steps, and c_i − c cancels the correction it applied, c − c_i, so that c_i⁺ estimates ∇f_i alone. The usual slips:
y − x (the move, not the gradient: the wrong sign), dividing by K or η_l alone, and c − c_i.

Exercise 2 (a small experiment): find, to within 0.1, the largest correction strength α at which SCAFFOLD still
converges on the quadratic (K = 10, η_l = 0.1): it ends within 0.01 of w* after 40 rounds, and α + 0.1 does not.
Solution: α = 2.2, or any α in about (2.14, 2.24]: SCAFFOLD ends 1.9e-3 from w* at α = 2.2, 0.011 at 2.25, 0.06 at
2.3 and 32 at 2.5. The figure brackets the edge (α = 2 converges, α = 3 blows up); halving the bracket three times
finds it. Beyond it each round's correction overshoots by more than the last, and the error grows geometrically: the
paper's α = 1 sits well inside the stable range on this toy, a margin that a stale correction uses up.
"""
from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import torch

from ..federation import Federation
from . import WrongAnswer, check, is_number, require, shown
from .client_drift import distances, toy_config

TASKS = {1: "write eq. (2), SCAFFOLD's control-variate update c_i⁺, as new_control_variate(c_i, c, x, y, steps, lr); "
            "the check compares it with what fedkit's SCAFFOLD clients keep over a few rounds.",
         2: "find, to within 0.1, the largest correction strength α at which SCAFFOLD still converges on the quadratic "
            "(K = 10, η_l = 0.1): it ends within 0.01 of w* after {rounds} rounds, and α + 0.1 does not."}
HINTS = {1: "c_i, c, x and y are torch tensors of the model's shape, steps (K) and lr (η_l) numbers.",
         2: "the left panel brackets the edge between two of its α: halve the bracket until it is 0.1 wide."}
REFERENCE_ALPHA = 2.2  # 1.9e-3 from w* after 40 rounds; α = 2.3 ends 0.06 away
STEP = 0.1  # exercise 2: the edge to within this
CONVERGED = 0.01  # exercise 2: ‖x_T − w*‖ below this counts as converged
MAX_ALPHA = 5.0


def alpha_sweep(alphas, lr: float = 0.1, local_steps: int = 10, rounds: int = 40, participation: float = 1.0):
    """‖x_t − w*‖ per round of SCAFFOLD with correction strength α (client step y ← y − η_l (g_i(y) + α(c − c_i)),
    α = 1 the paper's) on the toy, and FedAvg's (α = 0 is FedAvg exactly): one row per (method, α, round)."""
    rows = []
    for alpha in alphas:
        algorithm = "fedavg" if alpha == 0 else "scaffold"
        args = {} if alpha == 0 else {"alpha": float(alpha)}
        cfg = toy_config(algorithm, local_steps, lr, rounds, algorithm_args=args, participation=participation)
        rows += [{"alpha": alpha, "round": t, "distance": d} for t, d in enumerate(distances(cfg))]
    return pd.DataFrame(rows)


def reference_control_variate(c_i, c, x, y, steps, lr):
    """The reference answer: SCAFFOLD's option II."""
    return c_i - c + (x - y) / (steps * lr)


def check_exercise(new_control_variate, rounds: int = 3) -> None:
    """Exercise 1 (see :func:`fedkit.course.check`): ``new_control_variate(c_i, c, x, y, steps, lr)`` returns client
    i's new control variate c_i⁺ (SCAFFOLD, option II) from its old one c_i, the server's c, the round's global model
    x, the client's model y after ``steps`` local steps of learning rate ``lr``. Checked against what fedkit's SCAFFOLD
    clients keep over ``rounds`` rounds of the toy, half the clients sampled per round (so c_i, c and x all differ
    from zero)."""
    cfg = toy_config("scaffold", local_steps=5, lr=0.1, rounds=rounds, participation=0.5)  # ConfigError: a ValueError

    def judge(update) -> str:
        require(callable(update), f"answer with a function (new_control_variate), got {shown(update)}")
        require(_takes_six(update), f"new_control_variate must take six arguments (c_i, c, x, y, steps, lr), got "
                                    f"{shown(update)}")
        fed = Federation(cfg)
        before = fed.initial()
        for rnd in fed.rounds(before):
            ids = torch.as_tensor(rnd.clients)
            x, c = before.w, before.server["c"]
            for j, i in enumerate(ids):
                c_i, y = before.kept["c_i"][i], x + rnd.uploads["delta"][j]
                kept = rnd.after.kept["c_i"][i]
                try:
                    got = update(c_i.clone(), c.clone(), x.clone(), y.clone(), fed.cfg.local_steps, fed.cfg.lr)
                except Exception as err:  # noqa: BLE001 - the student's function fails: say how, in one line
                    raise WrongAnswer(f"your function raises {type(err).__name__}: {' '.join(str(err).split())}") \
                        from err
                require(got is not None, "your function returns None: did it forget to `return` c_i⁺?")
                try:
                    got = got if torch.is_tensor(got) else torch.as_tensor(np.asarray(got, dtype=np.float32))
                except (TypeError, ValueError):
                    raise WrongAnswer(f"c_i⁺ must be a tensor of the model's shape {tuple(kept.shape)}, your function "
                                      f"returns {shown(got)}") from None
                require(got.shape == kept.shape,
                        f"c_i⁺ must have the model's shape {tuple(kept.shape)}, got {tuple(got.shape)}")
                require(torch.allclose(got.float(), kept, rtol=1e-4, atol=1e-5),
                        f"round {rnd.info.t}, client {int(i)}: you return c_i⁺ = {got.numpy().round(4)}, SCAFFOLD "
                        f"keeps {kept.numpy().round(4)}; "
                        + slip(got.float(), c_i, c, x, y, fed.cfg.local_steps, fed.cfg.lr))
            before = rnd.after
        return f"your c_i⁺ matches fedkit's SCAFFOLD for every sampled client over {rounds} rounds"

    check(new_control_variate, reference_control_variate, judge, TASKS[1], HINTS[1],
          "new_control_variate once it computes eq. (2)")


def slip(got, c_i, c, x, y, steps, lr) -> str:
    """Which part of eq. (2) the wrong c_i⁺ ``got`` gets wrong, said without the equation."""
    close = lambda a: torch.allclose(got, a, rtol=1e-4, atol=1e-5)  # noqa: E731
    if close(c_i - c - (x - y) / (steps * lr)):
        return "check the sign of the term in x and y: c_i⁺ is a gradient, and the client walked down it, from x to y."
    if any(close(c_i - c + (x - y) * s) for s in (1, 1 / steps, 1 / lr)):
        return ("check the scale of the term in x and y: c_i⁺ is a mean gradient over the K steps of size η_l, not a "
                "distance in weight space.")
    if close((x - y) / (steps * lr)) or close(c - c_i + (x - y) / (steps * lr)):
        return "check the terms in c_i and c: the client applied the correction c − c_i, which c_i⁺ must take out."
    return "compare each term of your function with eq. (2): the old variates c_i and c, and the round's move x − y."


def check_exercise_2(alpha, rounds: int = 40) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): an α > 1 at which SCAFFOLD (K = 10, η_l = 0.1) ends within 0.01
    of w* after ``rounds`` rounds and α + 0.1 does not: the edge of over-correction, to within 0.1."""
    toy_config("scaffold", rounds=rounds)  # the settings, by Config's rules (ConfigError, a ValueError)

    def judge(a) -> str:
        require(is_number(a) and 1 < a <= MAX_ALPHA,
                f"α must be a number in (1, {MAX_ALPHA:g}] (α = 1 is the paper's correction), got {shown(a)}")
        a = float(a)
        ends = alpha_sweep([a, a + STEP], rounds=rounds).groupby("alpha")["distance"].last().to_numpy()
        require(ends[0] < CONVERGED, f"with α = {a:g} SCAFFOLD ends {ends[0]:.2g} from w* after {rounds} rounds: it "
                                     "over-corrects already. The edge lies lower.")
        require(not ends[1] < CONVERGED, f"with α = {a:g} and with α = {a + STEP:g} SCAFFOLD still converges "
                                         f"({ends[0]:.1e} and {ends[1]:.1e} from w*). The edge lies higher.")
        return (f"SCAFFOLD ends {ends[0]:.1e} from w* with α = {a:g} and {ends[1]:.2g} with α = {a + STEP:g}: "
                "the edge of over-correction")

    check(alpha, REFERENCE_ALPHA, judge, TASKS[2].format(rounds=rounds), HINTS[2], f"your α (a number in (1, "
                                                                                     f"{MAX_ALPHA:g}])")


def _takes_six(function) -> bool:
    """Whether ``function`` can be called with six positional arguments (a callable without a signature to read, such
    as some builtins, is called and judged by what it does)."""
    try:
        inspect.signature(function).bind(*range(6))
    except TypeError:
        return False
    except ValueError:  # no signature to read
        pass
    return True

"""Lesson 03, control variates: SCAFFOLD's correction on the quadratic federation of lesson 02, how a too strong
(or stale) correction over-corrects, and the exercise (write SCAFFOLD's control-variate update, option II)."""
from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import torch

from ..federation import Federation
from . import WrongAnswer, check, require, shown
from .client_drift import distances, toy_config

TASK = ("write eq. (2), SCAFFOLD's control-variate update c_i⁺, as new_control_variate(c_i, c, x, y, steps, lr); the "
        "check compares it with what fedkit's SCAFFOLD clients keep over a few rounds.")
HINT = "c_i, c, x and y are torch tensors of the model's shape, steps (K) and lr (η_l) numbers."


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
    """The exercise (see :func:`fedkit.course.check`): ``new_control_variate(c_i, c, x, y, steps, lr)`` returns client
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
                        f"keeps {kept.numpy().round(4)}. Option II: c_i⁺ = c_i − c + (x − y_i) / (K η_l).")
            before = rnd.after
        return f"your c_i⁺ matches fedkit's SCAFFOLD for every sampled client over {rounds} rounds"

    check(new_control_variate, reference_control_variate, judge, TASK, HINT,
          "new_control_variate once it computes eq. (2)")


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

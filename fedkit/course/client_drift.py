"""Lesson 02 (client drift): the four-client quadratic federation of the notebook, and the checkers of the lesson's
two exercises (``check_exercise`` and ``check_exercise_2``, on that federation).

Exercise 1 (a small experiment): with a ten times smaller step, η_l = 0.01, find a number of local steps K at which
FedAvg ends within 0.05 of w* after 100 rounds.
Solution: K = 5 to 8 (K = 6 ends 0.02 away). Two effects pull apart: K = 1 is a gradient step on the global objective
(no drift) but with η_l = 0.01 it is still 1.3 away after 100 rounds; each extra step moves the model further per round
and adds drift, whose bias grows with η_l (K − 1). K = 4 is still on its way (0.08), K = 9 already settled too far
(0.051), K = 10 at 0.058. At η_l = 0.1 only K = 1 passes: the smaller step buys room for local work, which is why
local steps save communication only with a small enough η_l.

Exercise 2 (reasoning): where does FedAvg (η_l = 0.1) end when every client runs to its own optimum in every round
(K → ∞)?
Solution: at the mean of the client optima, (1/N) Σ_i b_i = (−0.375, 0), not at w* = (Σ A_i)⁻¹ Σ A_i b_i: after many
steps y_i = b_i whatever x_t was, so x_{t+1} is their plain average from the first round on and the curvatures no
longer count. Drift grows with K from 0 (K = 1, w*) to this point; the check runs K = 500.
"""
from __future__ import annotations

import numpy as np

from ..analysis import drift_paths
from ..config import Config
from ..data.toy import optimum, quadratic
from . import WrongAnswer, check, is_number, is_whole, require, shown

# client i minimises f_i(w) = ½ (w − b_i)ᵀ A_i (w − b_i): centres b_i and curvatures A_i
CENTERS = [[2.0, 0.0], [-1.0, 3.0], [0.5, -2.0], [-3.0, -1.0]]
CURVATURES = [[[2.0, 0.3], [0.3, 0.5]], [[0.4, 0.0], [0.0, 1.5]], [[1.0, -0.4], [-0.4, 1.2]],
              [[0.3, 0.1], [0.1, 0.2]]]
TOY = {"centers": CENTERS, "curvatures": CURVATURES}
TOLERANCE = 0.05  # exercise 1: FedAvg ends within this distance of w*; exercise 2: of where FedAvg ends
TASKS = {1: "with η_l = {lr:g}, find a number of local steps K at which FedAvg ends within {tol} of w* after {rounds} "
            "rounds.",
         2: "where does FedAvg (η_l = {lr:g}) end when every client runs to its own optimum in every round (K → ∞)? "
            "Give the point (w0, w1)."}
HINTS = {1: "K = 1 has no drift, but how far does it get in {rounds} rounds of so small a step? More steps per round "
            "move further, and drift more.",
         2: "after very many local steps, where is each client's y_i, and does it still depend on x_t?"}
REFERENCE_K = 6  # η_l = 0.01: 0.02 from w* after 100 rounds (K = 5 to 8 pass)
MAX_K = 20  # answers above are refused before running (K = 10 already drifts; 100 rounds of K = 100 take ~20 s)
LARGE_K = 500  # exercise 2: "K → ∞" as run (each client within 1e-3 of its optimum after a round)
LR_RANGE = (0.05, 0.5)  # exercise 2: η_l at which LARGE_K steps reach every client's optimum, stably


def toy_config(algorithm: str = "fedavg", local_steps: int = 10, lr: float = 0.1, rounds: int = 60, **fields) -> Config:
    """The notebook's federation: 4 clients, one quadratic each, every client in every round, start at (3, 3)."""
    return Config(dataset="quadratic", dataset_args=TOY, partition="natural", partition_args={}, num_clients=4,
                  model="quadratic", model_args={"init": [3.0, 3.0]}, algorithm=algorithm, rounds=rounds,
                  local_steps=local_steps, batch_size=8, lr=lr, **fields)


def w_star() -> np.ndarray:
    """The global optimum (Σ A_i)⁻¹ Σ A_i b_i."""
    return optimum(quadratic(**TOY))


def distances(cfg: Config) -> np.ndarray:
    """‖x_t − w*‖ for t = 0..T of ``cfg``, run by fedkit (sequential engine)."""
    server, _ = drift_paths(cfg)
    return np.linalg.norm(server - w_star(), axis=1)


def check_exercise(local_steps, lr: float = 0.01, rounds: int = 100) -> None:
    """Exercise 1 (see :func:`fedkit.course.check`): a number of local steps K at which FedAvg (η_l = ``lr``,
    ``rounds`` rounds) ends within 0.05 of w*."""
    toy_config("fedavg", REFERENCE_K, lr, rounds)  # the settings, by Config's rules (ConfigError, a ValueError)

    def judge(k) -> str:
        require(is_whole(k) and 1 <= k <= MAX_K,
                f"K must be a whole number of local steps in [1, {MAX_K}], got {shown(k)}")
        k = int(k)
        path = distances(toy_config("fedavg", k, lr, rounds))
        way = ("it is still closing in on w*: take more local steps, to move further per round" if path[-11] > path[-1]
               else "it has settled at a biased point: its clients drift. Take fewer local steps")
        require(path[-1] < TOLERANCE, f"with K = {k} FedAvg ends {path[-1]:.3f} from w* after {rounds} rounds, not "
                                      f"within {TOLERANCE}; {way}.")
        return f"with K = {k} FedAvg ends {path[-1]:.1e} from w*"

    task = TASKS[1].format(lr=lr, rounds=rounds, tol=TOLERANCE)
    check(local_steps, REFERENCE_K, judge, task, HINTS[1].format(rounds=rounds), f"your K (a whole number in [1, "
                                                                                  f"{MAX_K}])")


def check_exercise_2(point, lr: float = 0.1) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): the point (w0, w1) where FedAvg (η_l = ``lr``) ends when its
    clients run to their own optima every round; measured with K = 500 local steps."""
    low, high = LR_RANGE
    if not (is_number(lr) and low <= lr <= high):
        raise ValueError(f"lr must be a number in [{low}, {high}] (every client reaches its optimum, stably), got "
                         f"{shown(lr)}")

    def judge(p) -> str:
        listed = p.tolist() if isinstance(p, np.ndarray) else p
        require(isinstance(listed, (list, tuple)) and len(listed) == 2 and all(is_number(v) and abs(v) <= 10
                                                                             for v in listed),
                f"answer with a point (w0, w1), two numbers in [−10, 10], got {shown(p)}")
        p = np.asarray(listed, dtype=float)
        end = drift_paths(toy_config("fedavg", LARGE_K, lr, rounds=2))[0][-1].round(3) + 0.0  # + 0.0: no -0.0
        off = end - p
        if np.linalg.norm(off) >= TOLERANCE:
            where = (f"it lies {'right' if off[0] > 0 else 'left'} of it and {'above' if off[1] > 0 else 'below'}"
                     if np.linalg.norm(p - w_star()) >= TOLERANCE else "your point is w*, where K = 1 goes")
            raise WrongAnswer(f"FedAvg with K = {LARGE_K} ends {np.linalg.norm(off):.2f} from your point; {where}. "
                              "Where is each client's y_i after so many steps, whatever x_t was?")
        return f"with K = {LARGE_K} FedAvg ends at ({end[0]:.3f}, {end[1]:.3f}), the plain mean of the clients' optima"

    check(point, np.mean(CENTERS, axis=0), judge, TASKS[2].format(lr=lr), HINTS[2], "your point (w0, w1)")

"""Lesson 02, client drift: the four-client quadratic federation of the notebook, and the exercise (find a number of
local steps K at which FedAvg reaches the global optimum)."""
from __future__ import annotations

import numpy as np

from ..analysis import drift_paths
from ..config import Config
from ..data.toy import optimum, quadratic
from . import check, is_whole, require, shown

# client i minimises f_i(w) = ½ (w − b_i)ᵀ A_i (w − b_i): centres b_i and curvatures A_i
CENTERS = [[2.0, 0.0], [-1.0, 3.0], [0.5, -2.0], [-3.0, -1.0]]
CURVATURES = [[[2.0, 0.3], [0.3, 0.5]], [[0.4, 0.0], [0.0, 1.5]], [[1.0, -0.4], [-0.4, 1.2]],
              [[0.3, 0.1], [0.1, 0.2]]]
TOY = {"centers": CENTERS, "curvatures": CURVATURES}
TOLERANCE = 0.05  # the exercise: FedAvg ends within this distance of w*
TASK = "find a number of local steps K at which FedAvg (η_l = {lr:g}, {rounds} rounds) ends within {tol} of w*."
HINT = "reason from the text above before you try values, and think about what that K costs in communication."
REFERENCE_K = 1  # each round is then one gradient step on the global objective
MAX_K = 20  # answers above are refused before running (K = 10 already drifts; 100 rounds of K = 100 take ~20 s)


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


def check_exercise(local_steps, lr: float = 0.1, rounds: int = 100) -> None:
    """The exercise (see :func:`fedkit.course.check`): a number of local steps K at which FedAvg (η_l = ``lr``,
    ``rounds`` rounds) ends within 0.05 of w*."""
    toy_config("fedavg", REFERENCE_K, lr, rounds)  # the settings, by Config's rules (ConfigError, a ValueError)

    def judge(k) -> str:
        require(is_whole(k) and 1 <= k <= MAX_K,
                f"K must be a whole number of local steps in [1, {MAX_K}], got {shown(k)}")
        k = int(k)
        final = distances(toy_config("fedavg", k, lr, rounds))[-1]
        require(final < TOLERANCE, f"with K = {k} FedAvg ends {final:.3f} from w* after {rounds} rounds, not within "
                                   f"{TOLERANCE}: its clients still drift. Take fewer local steps.")
        return f"with K = {k} FedAvg ends {final:.1e} from w*"

    task = TASK.format(lr=lr, rounds=rounds, tol=TOLERANCE)
    check(local_steps, REFERENCE_K, judge, task, HINT, f"your K (a whole number in [1, {MAX_K}])")

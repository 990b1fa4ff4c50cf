"""Lesson 02, client drift: the four-client quadratic federation of the notebook, and the exercise (find a number of
local steps K at which FedAvg reaches the global optimum)."""
from __future__ import annotations

import numpy as np

from ..analysis import drift_paths
from ..config import Config
from ..data.toy import optimum, quadratic

# client i minimises f_i(w) = ½ (w − b_i)ᵀ A_i (w − b_i): centres b_i and curvatures A_i
CENTERS = [[2.0, 0.0], [-1.0, 3.0], [0.5, -2.0], [-3.0, -1.0]]
CURVATURES = [[[2.0, 0.3], [0.3, 0.5]], [[0.4, 0.0], [0.0, 1.5]], [[1.0, -0.4], [-0.4, 1.2]],
              [[0.3, 0.1], [0.1, 0.2]]]
TOY = {"centers": CENTERS, "curvatures": CURVATURES}
TOLERANCE = 0.05  # the exercise: FedAvg ends within this distance of w*


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


def check_exercise(local_steps, lr: float = 0.1, rounds: int = 100) -> str:
    """The exercise: a number of local steps K at which FedAvg (η_l = ``lr``, ``rounds`` rounds) ends within 0.05
    of w*."""
    assert isinstance(local_steps, int | np.integer) and not isinstance(local_steps, bool) and local_steps >= 1, \
        f"K must be a whole number of local steps ≥ 1, got {local_steps!r}"
    final = distances(toy_config("fedavg", int(local_steps), lr, rounds))[-1]
    assert final < TOLERANCE, (f"with K = {local_steps} FedAvg ends {final:.3f} from w* after {rounds} rounds, not "
                               f"within {TOLERANCE}: its clients still drift. Take fewer local steps.")
    return f"correct: with K = {local_steps} FedAvg ends {final:.1e} from w*"

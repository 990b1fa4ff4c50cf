"""Client drift made visible: the server iterates and every client's local path, round by round."""
from __future__ import annotations

import numpy as np

from ..config import Config


def drift_paths(cfg: Config) -> tuple[np.ndarray, dict[int, list[np.ndarray]]]:
    """Run ``cfg`` with the sequential engine, recording the global model after every round ([T+1, d])
    and, per round, each sampled client's local iterates ([K_i + 1, d] each, starting at x_t)."""
    from ..run import Federation

    fed = Federation(cfg.replace(engine="sequential"))
    w = fed.fm.flat()
    state, w_prev = fed.algorithm.init(w), w
    server, local = [w.numpy().copy()], {}
    for t in range(1, cfg.rounds + 1):
        fed.engine.trace = []
        outcome = fed.train_round(t, w, state, w_prev)
        local[t] = [np.stack([v.detach().cpu().numpy() for v in path]) for path in fed.engine.trace]
        w_prev, w, state = w, outcome.w, outcome.state
        server.append(w.detach().cpu().numpy().copy())
    fed.engine.trace = None
    return np.stack(server), local

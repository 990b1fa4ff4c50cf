"""Client drift made visible: the server iterates and every client's local path, round by round."""
from __future__ import annotations

import numpy as np

from ..config import Config


def drift_paths(cfg: Config) -> tuple[np.ndarray, dict[int, list[np.ndarray]]]:
    """Run ``cfg`` with the sequential engine, recording the global model after every round ([T+1, d])
    and, per round, each sampled client's local iterates ([K_i + 1, d] each, starting at x_t)."""
    from ..federation import Federation

    fed = Federation(cfg.replace(engine="sequential"))
    s = fed.initial()
    server, local = [s.w.cpu().numpy().copy()], {}
    for rnd in fed.rounds(s, trace=True):
        local[rnd.info.t] = [np.stack([v.detach().cpu().numpy() for v in path]) for path in rnd.result.paths]
        server.append(rnd.after.w.detach().cpu().numpy().copy())
    return np.stack(server), local

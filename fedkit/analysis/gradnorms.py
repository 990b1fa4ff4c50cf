"""Per-tensor norms of loss gradients and of client updates."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ..engine.functional import FlatModel, sample_loss, summed_gradient


def loss_gradient(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, task: str,
                  reduction: str = "sum", buffers: dict | None = None, chunk: int = 2048) -> torch.Tensor:
    """The flat gradient at w of the summed (or mean) per-sample loss over (x, y), accumulated chunk by chunk.
    The model runs in eval mode (BatchNorm running statistics, no dropout), so chunking leaves it unchanged."""
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', got {reduction!r}")
    g = summed_gradient(fm, w, x, y, sample_loss(task), buffers, chunk)
    return g / len(x) if reduction == "mean" else g


def layer_gradient_norms(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, task: str,
                         reduction: str = "sum", buffers: dict | None = None, chunk: int = 2048) -> pd.DataFrame:
    """Norm of the loss gradient (``loss_gradient``) per parameter tensor: columns tensor, layer, norm."""
    g = loss_gradient(fm, w, x, y, task, reduction, buffers, chunk)
    return _frame(fm, g[None], [0]).drop(columns="client")


def client_gradient_norms(fed, w: torch.Tensor, clients: Sequence[int], reduction: str = "sum",
                          buffers: dict | None = None, chunk: int = 2048) -> pd.DataFrame:
    """Per-tensor gradient norms at w on each client's own training data ``fed.parts[i]``: columns client,
    tensor, layer, norm."""
    grads = []
    for i in clients:
        idx = torch.as_tensor(fed.parts[i], dtype=torch.long, device=fed.x_train.device)
        grads.append(loss_gradient(fed.fm, w, fed.x_train[idx], fed.y_train[idx], fed.task, reduction, buffers,
                                   chunk))
    return _frame(fed.fm, torch.stack(grads), list(clients))


def round_gradient_norms(fed, models: dict, clients: pd.DataFrame, reduction: str = "sum",
                         chunk: int = 2048) -> pd.DataFrame:
    """``client_gradient_norms`` of each global model ``models[t]`` (after round t) on the clients that took part
    in round t (the rows of a History's ``clients`` frame with that round): columns round, client, samples,
    tensor, layer, norm."""
    frames = []
    for t, w in sorted(models.items()):
        ids = [int(i) for i in clients.loc[clients["round"] == t, "client"]]
        if not ids:
            raise ValueError(f"no client took part in round {t}")
        frame = client_gradient_norms(fed, w.to(fed.x_train.device), ids, reduction, chunk=chunk)
        frame.insert(0, "round", t)
        frame.insert(2, "samples", [len(fed.parts[i]) for i in frame["client"]])
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def update_norms(fm: FlatModel, deltas: torch.Tensor, clients: Sequence[int] | None = None) -> pd.DataFrame:
    """Per-tensor norms of client updates (rows of ``deltas`` [n, d]; clients default to 0..n-1): columns client,
    tensor, layer, norm."""
    return _frame(fm, deltas, range(len(deltas)) if clients is None else clients)


def _frame(fm: FlatModel, rows: torch.Tensor, clients) -> pd.DataFrame:
    """Long frame of the per-tensor norms of each row of ``rows`` [n, d], row i belonging to clients[i]."""
    tensors = fm.layout.tensors
    norms = torch.stack([rows[:, t.slice].norm(dim=1) for t in tensors], 1)  # [n, tensors]
    n = len(rows)
    return pd.DataFrame({"client": np.repeat(np.asarray(list(clients)), len(tensors)),
                         "tensor": [t.name for t in tensors] * n, "layer": [t.layer for t in tensors] * n,
                         "norm": norms.detach().reshape(-1).cpu().double().numpy()})

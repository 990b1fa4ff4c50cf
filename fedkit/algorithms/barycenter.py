"""FedDUAL's barycentric aggregation (Dubey et al., eqs. 12–13), as the official code runs it (algorithms-seed §2.3,
item 7): start from the mean of the client vectors u_k, then repeat

    D_k = W1(b, u_k)                    the 1-D Wasserstein-1 distance between the value distributions of two vectors
    γ_k = exp(−D_k / ε)                 (eq. 12)
    b  ← Σ_k w_k γ_k u_k / (Σ_k w_k γ_k + 1e-10)   (eq. 13, w_k = 1/n by default)

in float64. Positions are ignored by W1, so the result does not depend on how a tensor is laid out. For two
value distributions of m entries each, W1 is the mean gap of the sorted values (``w1_sorted``: the clients' vectors
are sorted once; ``ot.wasserstein_1d`` computes the same number, which a test checks, about 100 times slower on a
161k-entry tensor). Once b stops changing it is a fixed point and the remaining iterations are skipped. Since
exp(−D/ε) underflows to 0 once D > ~745 ε, the scheme is winner-take-all at small ε: b collapses onto the one client
closest to the running estimate, or onto the zero vector when every client is farther than that (``collapse``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Barycenter:
    value: torch.Tensor  # b [m], float64
    gamma: torch.Tensor  # γ_k of the last iteration [n]

    @property
    def collapse(self) -> str:
        """'zero' (every γ_k = 0: b is the zero vector), 'one' (a single client carries all the weight) or
        'mixed'."""
        positive = int((self.gamma > 0).sum())
        return "zero" if positive == 0 else "one" if positive == 1 else "mixed"

    @property
    def winner(self) -> int | None:
        """The client b collapsed onto (collapse 'one'), else None."""
        return int(self.gamma.argmax()) if self.collapse == "one" else None


def wasserstein_barycenter(u: torch.Tensor, eps: float = 1e-5, iterations: int = 150,
                           weights: torch.Tensor | None = None) -> Barycenter:
    """The re-weighted barycenter of the rows of ``u`` [n, m] (eqs. 12–13); W1 from ``ot.wasserstein_1d``."""
    if eps <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    u = u.detach().to(torch.float64)
    n = len(u)
    w = torch.full((n,), 1.0 / n, dtype=torch.float64, device=u.device) if weights is None else weights.double()
    b = u.mean(0)
    gamma = torch.ones(n, dtype=torch.float64, device=u.device)
    u_sorted = u.sort(1).values
    for _ in range(iterations):
        gamma = torch.exp(-w1_sorted(b, u_sorted) / eps)  # eq. 12
        b, previous = (w * gamma) @ u / ((w * gamma).sum() + 1e-10), b  # eq. 13
        if torch.equal(b, previous):  # a fixed point: every later iteration is this one
            break
    return Barycenter(b, gamma)


def w1_sorted(b: torch.Tensor, u_sorted: torch.Tensor) -> torch.Tensor:
    """W1 between the value distribution of b [m] and each row of ``u_sorted`` [n, m] (rows sorted ascending)."""
    return (b.sort().values - u_sorted).abs().mean(1)


def free_support_barycenter(u: torch.Tensor) -> Barycenter:
    """For comparison with eqs. 12–13: the W2 barycenter of the rows' value distributions (uniform weights), placed
    in the rank order of the mean vector's entries (W2 ignores positions, a model tensor does not). One step of the
    free-support fixed point (Cuturi & Doucet 2014, as ``ot.lp.free_support_barycenter``) from the sorted mean, with
    each plan the exact 1-D optimal plan of POT's ``ot.emd_1d``: in 1-D one step is exact (every optimal plan matches
    sorted values, so the barycenter is the mean of the sorted rows). ``ot.lp.free_support_barycenter`` itself solves
    each plan by network simplex, whose default cap of 100,000 iterations stops short of optimality at a few thousand
    values (and, with ties, sometimes at 840). γ is 1 for every client."""
    import ot  # POT: only this comparison needs it

    rows = u.detach().to(torch.float64).cpu().numpy()
    n, m = rows.shape
    mean = rows.mean(0)
    uniform = np.full(m, 1.0 / m)
    start = np.sort(mean)
    support = sum(ot.emd_1d(start, row, uniform, uniform, metric="sqeuclidean", dense=False) @ row for row in rows)
    value = np.empty(m)
    value[mean.argsort(kind="stable")] = np.sort(support * m / n)  # T_i has mass 1/m per support point
    return Barycenter(torch.from_numpy(value).to(u.device),
                      torch.ones(n, dtype=torch.float64, device=u.device))

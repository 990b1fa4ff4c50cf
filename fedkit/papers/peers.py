"""The runs of the peer-parity notebooks (notebooks/peers/), listed without running them: ``fedkit figures --plan``
and the paper-config tests read them. Their settings live in ``fedkit.papers.niid_bench``."""
from __future__ import annotations

from ..config import Config
from . import niid_bench as N
from . import seeded

NOTES = {}  # what a notebook computes besides its runs (nothing here)


def runs(notebook: str, scale: str, seed: int = 0, device: str = "cpu") -> dict[str, Config]:
    """Every config notebook ``notebook`` (its file name without .ipynb) runs at ``scale`` with its default parameters
    and ``seed``, by label."""
    seeds = range(seed, seed + N.SEEDS[scale])
    if notebook == "niid_bench":
        cells = {N.cell_label(cell): N.config(*cell, scale=scale, seed=seed, device=device)
                 for cell in N.cells(scale)}
        return seeded(cells, seeds)
    if notebook == "scaffold_placement":
        return seeded(N.placement_configs(scale, seed=seed, device=device), seeds)
    raise ValueError(f"unknown peers notebook {notebook!r}; the notebooks are notebooks/peers/*.ipynb")

"""NIID-Bench (Li, Diao, Chen, He, "Federated Learning on Non-IID Data Silos: An Experimental Study", ICDE 2022) run
through fedkit: a peer-parity benchmark, its settings at the three notebook scales and the peers' numbers as data.

"paper": NIID-Bench's Sec. V settings. 10 clients, all in every round, 10 local epochs, batch 64, SGD η = 0.01 with
momentum 0.9, 50 rounds, its simple CNN (fedkit "cnn"), full MNIST / Fashion-MNIST (pixels / 255, no
normalisation, PyTorch's default initialisation: as NIID-Bench's code), the partitions fedkit has: #C = 1, 2, 3
(``labels_per_client``), p_k ~ Dir(0.5) (``dirichlet``), q ~ Dir(0.5) quantity skew (``quantity``) and IID.
FedAvg, FedProx (μ = 0.01, the NIID-Bench README's example; the paper tunes μ ∈ {0.001, 0.01, 0.1, 1} per cell and
reports the best), SCAFFOLD under both correction placements, FedNova; models averaged with data-size weights (as
NIID-Bench's code), SCAFFOLD's c ← c + (1/N) Σ Δc_i.
"small": a fixed sample of 3,000 training and 1,000 test images (300 a client, 5 steps an epoch), 5 local epochs,
4 rounds, tested after the last: every cell at 3 seeds in the notebook budget on a 2-core CPU. Its absolute
numbers are not NIID-Bench's (1/20 of the data, about 1/40 of the local steps per round, 4 of 50 rounds: the CNN is
still leaving its initial plateau, and seeds spread widely): the small table shows the placements and the methods'
order at a small budget; the paper scale (the GPU campaign) checks NIID-Bench's numbers. "ci": the 5k MNIST sample,
2 rounds of 1 epoch.

Kept differences (conventions, not fedkit's to fix): NIID-Bench's code adds weight decay 1e-5 (``--reg``, absent
from the paper's text); fedkit runs without, since FedNova's a_i has no closed form with it. NIID-Bench applies
SCAFFOLD's arithmetic to BatchNorm buffers too; its CNN has none.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..config import Config
from ..errors import ConfigError

DATASETS = {"MNIST": "mnist", "FMNIST": "fashion_mnist"}
PARTITIONS = {  # NIID-Bench's name: (fedkit partition, its arguments)
    "#C=1": ("labels_per_client", {"k": 1}),
    "#C=2": ("labels_per_client", {"k": 2}),
    "#C=3": ("labels_per_client", {"k": 3}),
    "Dir(0.5)": ("dirichlet", {"phi": 0.5}),
    "quantity Dir(0.5)": ("quantity", {"beta": 0.5}),
    "IID": ("iid", {}),
}
METHODS = {  # (label, placement): algorithm, its arguments
    ("FedAvg", ""): ("fedavg", {}),
    ("FedProx", ""): ("fedprox", {"mu": 0.01}),
    ("SCAFFOLD", "after_step"): ("scaffold", {"weighting": "data", "correction_at": "after_step"}),
    ("SCAFFOLD", "in_optimizer"): ("scaffold", {"weighting": "data", "correction_at": "in_optimizer"}),
    ("FedNova", ""): ("fednova", {}),
}
COMMON = dict(model="cnn", num_clients=10, local_steps=None, local_epochs=10, batch_size=64, lr=0.01,
              optimizer="sgd", optimizer_args={"momentum": 0.9}, rounds=50, engine="auto")
SCALES = {
    "paper": {},
    "small": dict(dataset_args={"train_samples": 3_000, "test_samples": 1_000}, local_epochs=5, rounds=4,
                  eval_every=4),
    "ci": dict(dataset="mnist_5k", local_epochs=1, rounds=2),
}
SEEDS = {"paper": 3, "small": 3, "ci": 1}

# The correction placement at NIID-Bench's own MNIST Dir(0.5) settings (the full data, 10 epochs of batch 64, momentum
# 0.9), where SCAFFOLD with its correction inside the optimizer returned NaN at round 3: "small" runs the paper's
# settings for their first 4 of 50 rounds (≈ 40 s a round on one CPU thread), "paper" all 50.
PLACEMENT_METHODS = [("FedAvg", ""), ("SCAFFOLD", "after_step"), ("SCAFFOLD", "in_optimizer")]
PLACEMENT_SCALES = {"paper": {}, "small": dict(rounds=4), "ci": dict(dataset="mnist_5k", local_epochs=1, rounds=2)}

# NIID-Bench's own numbers (Table III of the paper: top-1 accuracy, mean ± std of 3 runs, after 50 rounds) could not
# be consulted offline: "not found", NaN in every cell, rather than a number from memory.
# Two peers that did publish these cells, each with the correction placement its SCAFFOLD uses.
# Flower's NIID-Bench baseline: adap/flower, baselines/niid_bench/README.md at commit
# 5252f675773508b9701498e170773243d459ac99 (2023-11-07, "Add niid-Bench baseline (#2428)": PR #2428 as merged after
# its review; unchanged in its table since, e.g. at b6179b648549ad8fd0bb270dc6602c3e054cc2be, 2024-03-01),
# "Expected Results": per cell the mean ± std over 3 runs (the commit that put them in, d86024fba4ea4df2ab0a36018c5db8
# 8179faa431, "Update README.md with std (over 3 runs) in results") of each run's best test accuracy across its 50
# rounds ("the best accuracies across all rounds", the wording of 2f351d0aa24d7ce07b11fecf1461cc9e784fa248 in the
# review). Its SCAFFOLD steps SGD on g, then subtracts lr·(c − c_i): after_step (baselines/niid_bench/niid_bench/
# models.py, ScaffoldOptimizer.step_custom, same commit). Its FedProx column tunes μ over {0.001, 0.01, 0.1, 1}
# (run_exp.py runs all four); fedkit runs μ = 0.01. Its CIFAR-10 rows are left out (fedkit's cells have no CIFAR-10).
# The earlier version of the README (d55a3ea06850993aeac11ddd8324dcd4b39e4c90, 2023-09-28, "Update README.md with
# results for one seed", unchanged up to 6dc7b7353a6efff6c6937c9bdf8f8f69fe04970b) gave one value per cell, one run at
# seed 42 (`run_exp.py --seed 42`), without saying whether final or best; nothing here uses it any more: the CSVs
# rendered before this table carry its values in their column ``flower_baseline``.
FLOWER_SOURCE = ("Flower NIID-Bench baseline, adap/flower baselines/niid_bench/README.md at 5252f675773508b9701498e1707"
                 "73243d459ac99 (PR #2428 as merged): mean ± std over 3 runs of each run's best accuracy across rounds")
FLOWER = {  # (dataset, partition): {method: (mean, std)}, accuracy %
    ("MNIST", "IID"): {"FedAvg": (99.09, 0.05), "SCAFFOLD": (99.06, 0.15), "FedProx": (99.16, 0.04),
                       "FedNova": (99.05, 0.06)},
    ("MNIST", "Dir(0.5)"): {"FedAvg": (98.89, 0.07), "SCAFFOLD": (99.07, 0.06), "FedProx": (99.02, 0.02),
                            "FedNova": (98.03, 0.06)},
    ("MNIST", "#C=1"): {"FedAvg": (19.33, 11.82), "SCAFFOLD": (9.93, 0.12), "FedProx": (51.79, 26.75),
                        "FedNova": (52.58, 14.08)},
    ("MNIST", "#C=2"): {"FedAvg": (96.86, 0.30), "SCAFFOLD": (96.92, 0.52), "FedProx": (96.85, 0.15),
                        "FedNova": (96.65, 0.39)},
    ("MNIST", "#C=3"): {"FedAvg": (97.86, 0.34), "SCAFFOLD": (97.91, 0.10), "FedProx": (97.85, 0.06),
                        "FedNova": (97.62, 0.07)},
    ("FMNIST", "IID"): {"FedAvg": (89.23, 0.45), "SCAFFOLD": (89.33, 0.27), "FedProx": (89.42, 0.09),
                        "FedNova": (89.36, 0.09)},
    ("FMNIST", "Dir(0.5)"): {"FedAvg": (88.09, 0.29), "SCAFFOLD": (88.44, 0.25), "FedProx": (88.15, 0.42),
                             "FedNova": (88.22, 0.12)},
    ("FMNIST", "#C=1"): {"FedAvg": (28.39, 17.09), "SCAFFOLD": (10.00, 0.00), "FedProx": (32.65, 6.68),
                         "FedNova": (16.86, 9.30)},
    ("FMNIST", "#C=2"): {"FedAvg": (78.10, 2.51), "SCAFFOLD": (33.80, 41.22), "FedProx": (78.05, 0.99),
                         "FedNova": (71.67, 2.34)},
    ("FMNIST", "#C=3"): {"FedAvg": (82.43, 1.52), "SCAFFOLD": (80.32, 5.03), "FedProx": (82.99, 0.48),
                         "FedNova": (81.97, 1.34)},
}
# FedBench (nechbamohammed.github.io/FLBenchmarkUI, "A Benchmark Study on Realistic Non-IID Data Silos"), MNIST,
# 10 parties as NIID-Bench: mean ± std; the placement of its SCAFFOLD correction is not stated there.
FEDBENCH = {
    ("MNIST", "Dir(0.5)"): {"FedAvg": (98.85, 0.05), "FedProx": (98.91, 0.03), "SCAFFOLD": (61.99, 1.4),
                            "FedNova": (98.97, 0.03)},
    ("MNIST", "#C=1"): {"FedAvg": (40.34, 26.51), "FedProx": (40.24, 21.8), "SCAFFOLD": (10.99, 0.5),
                        "FedNova": (54.66, 9.53)},
}


def config(dataset: str, partition: str, method: str, placement: str = "", scale: str = "small", seed: int = 0,
           device: str = "cpu", **changes) -> Config:
    """The config of one cell: ``dataset`` and ``partition`` by NIID-Bench's names, ``method`` and, for SCAFFOLD,
    the correction ``placement`` ("after_step" or "in_optimizer"); ``changes`` override any field."""
    algorithm, args = METHODS[(method, placement)]
    kind, kind_args = PARTITIONS[partition]
    values = {**COMMON, "dataset": DATASETS[dataset], **SCALES[scale]}
    values.update(partition=kind, partition_args=kind_args, algorithm=algorithm, algorithm_args=args, seed=seed,
                  device=device, **changes)
    return Config(**values)


def placement_configs(scale: str, seed: int = 0, device: str = "cpu") -> dict[str, Config]:
    """FedAvg and SCAFFOLD under both correction placements at NIID-Bench's MNIST Dir(0.5) settings, tested every
    round, by label ("SCAFFOLD after_step", ...); ``scale`` shortens the run (``PLACEMENT_SCALES``), never the data."""
    return {f"{method} {placement}".strip(): config("MNIST", "Dir(0.5)", method, placement, scale="paper", seed=seed,
                                                   device=device, eval_every=1).replace(**PLACEMENT_SCALES[scale])
            for method, placement in PLACEMENT_METHODS}


def cells(scale: str, datasets=None, partitions=None, methods=None, labels=None) -> list[tuple[str, str, str, str]]:
    """(dataset, partition, method, placement) of every cell run at ``scale`` (ci: MNIST Dir(0.5) and #C=2), or of
    the slice of it on ``datasets``, ``partitions`` and ``methods`` (NIID-Bench's names, "SCAFFOLD" naming both
    placements; None: all), e.g. one GPU job's share or what one CPU session can finish; ``labels`` keeps, of those,
    the cells named by their label (``cell_label``), e.g. two (data set, partition) pairs and one placement."""
    every = (["MNIST"], ["Dir(0.5)", "#C=2"]) if scale == "ci" else (list(DATASETS), list(PARTITIONS))
    every_method = list(dict.fromkeys(m for m, _ in METHODS))
    datasets, partitions, methods = (_pick(chosen, names, what, scale) for chosen, names, what in
                                     ((datasets, every[0], "data set"), (partitions, every[1], "partition"),
                                      (methods, every_method, "method")))
    listed = [(d, p, m, c) for d in datasets for p in partitions for m, c in METHODS if m in methods]
    if labels is None:
        return listed
    chosen = _pick(labels, [cell_label(c) for c in listed], "cell", scale)
    return [c for c in listed if cell_label(c) in chosen]


def cell_label(cell: tuple[str, str, str, str]) -> str:
    """A cell's name, as in ``fedkit figures --plan --match``: "FMNIST/IID/FedAvg", "MNIST/#C=2/SCAFFOLD/after_step"."""
    return "/".join(part for part in cell if part)


def _pick(chosen, names: list[str], what: str, scale: str) -> list[str]:
    """``names`` in their order, all (``chosen`` None) or those in ``chosen``; an unknown or empty choice raises."""
    if chosen is None:
        return names
    unknown = [n for n in chosen if n not in names]
    if unknown or not chosen:
        raise ConfigError(f"NIID-Bench {what}s {list(chosen)} at scale {scale!r}: "
                          f"{f'unknown {unknown}' if unknown else 'an empty choice'}; choose from {names}")
    return [n for n in names if n in chosen]


def peers(dataset: str, partition: str, method: str) -> dict[str, float]:
    """The published numbers of the peers for one cell (NaN where a peer has none), in %: Flower's mean and std of
    the best accuracy across rounds (``FLOWER``), FedBench's mean and std."""
    flower = FLOWER.get((dataset, partition), {}).get(method, (np.nan, np.nan))
    fedbench = FEDBENCH.get((dataset, partition), {}).get(method, (np.nan, np.nan))
    return {"niid_bench_published": np.nan, "flower_best_mean": flower[0], "flower_best_std": flower[1],
            "fedbench": fedbench[0], "fedbench_std": fedbench[1]}


def best_accuracy(history) -> float:
    """A run's highest test accuracy over the rounds it tested (round 0, the initial model, included, as in Flower's
    history), in %; a diverged run's over the rounds before it diverged (Flower's best across rounds keeps those
    too); NaN if no round has a finite accuracy."""
    accuracy = history.rounds["test_accuracy"].to_numpy(dtype=float)
    return 100 * float(np.nanmax(accuracy)) if np.isfinite(accuracy).any() else np.nan


def tidy(histories: dict, scale: str) -> pd.DataFrame:
    """One row per (dataset, partition, method, placement, seed) from ``run_seeds``-style histories keyed
    ((dataset, partition, method, placement), seed): fedkit's final accuracy (%, NaN if diverged), its best accuracy
    across the rounds tested (%, ``best_accuracy``: what Flower's baseline reports; at paper scale every round is
    tested, at small only round 0 and the last), whether the run diverged, rounds run, and the peers' published
    values of the cell."""
    rows = []
    for ((dataset, partition, method, placement), seed), h in histories.items():
        rows.append({"dataset": dataset, "partition": partition, "method": method,
                     "correction_at": placement or "n/a", "seed": seed, "scale": scale,
                     "final_accuracy": 100 * h.final_accuracy if not h.diverged else np.nan,
                     "best_accuracy": best_accuracy(h),
                     "diverged": bool(h.diverged), "rounds": int(h.rounds["round"].iloc[-1]),
                     **peers(dataset, partition, method)})
    return pd.DataFrame(rows)

"""FedDUAL's experimental settings (Sec. 5; algorithms-seed §2.5–2.8) at the three notebook scales, and the paper's
numbers (Tables 1–4).

"paper": 100 clients, 10 a round, FedDUAL's own Dirichlet split (α = 0.01), 3 local epochs of Adam (η 1e-3,
ε 1e-7) with batch 32, 500 rounds [assumption: the paper says "vary by dataset"]; FMNIST on its LeNet, CIFAR on the
ImageNet VGG-16 trunk (frozen, run once: ``backbone``) with a 64-unit head. "small" keeps all of that on a fixed
12,000 / 2,000 sample of Fashion-MNIST (CIFAR-10: the 4,000 / 1,000 real subset in the data root; CIFAR-100 is not
available offline and has no substitute here) for 40 rounds; the offline VGG trunk is randomly initialised (seeded),
since torchvision's ImageNet weights cannot be downloaded here — labelled on every figure. "ci": 20 clients on the
5k MNIST sample, 3 rounds.
"""
from __future__ import annotations

import inspect
import math

import pandas as pd

from ..config import Config
from ..engine import FlatModel
from ..models.registry import build_model
from . import seeded

COMMON = dict(num_clients=100, clients_per_round=10, partition="feddual_dirichlet", partition_args={"alpha": 0.01},
              local_steps=None, local_epochs=3, batch_size=32, lr=1e-3, optimizer="adam",
              optimizer_args={"eps": 1e-7}, rounds=500)
PAPER = {
    "fmnist": dict(dataset="fashion_mnist", model="feddual_lenet"),
    "cifar10": dict(dataset="cifar10", dataset_args={"backbone": "vgg16_imagenet"}, model="mlp",
                    model_args={"hidden": [64]}),
    "cifar100": dict(dataset="cifar100", dataset_args={"backbone": "vgg16_imagenet"}, model="mlp",
                     model_args={"hidden": [64]}),
}
SMALL = {
    "fmnist": dict(dataset_args={"train_samples": 12_000, "test_samples": 2_000}, rounds=40),
    "cifar10": dict(dataset="cifar10_subset", dataset_args={"backbone": "vgg16_random"}, rounds=40),
}
CI = dict(dataset="mnist_5k", dataset_args={}, model="feddual_lenet", model_args={}, num_clients=20,
          clients_per_round=5, rounds=3, local_epochs=1, partition_args={"alpha": 0.1})

# Table 1's methods, every one with Adam on the clients (Sec. 5). Hyper-parameters from the paper's grids
# [assumption where it does not say which value Table 1 used]: FedProx μ = 0.001, FedNova's proximal μ = 0.001,
# FedDyn α = 0.01, MOON μ = 1 and τ = 0.5, FedPVR on the output layer.
METHODS = {
    "FedAvg": ("fedavg", {"weighting": "uniform"}),
    "FedProx": ("fedprox", {"mu": 0.001, "weighting": "uniform"}),
    "FedNova": ("fednova", {"mu": 0.001, "weighting": "uniform"}),
    "SCAFFOLD": ("scaffold", {}),
    "FedBN": ("fedbn", {}),
    "FedDyn": ("feddyn", {"alpha": 0.01}),
    "MOON": ("moon", {"mu": 1.0, "tau": 0.5}),
    "FedPVR": ("fedpvr", {"layers": "output"}),
    "FedDUAL": ("feddual", {}),
}
SEEDS = {"ci": 1, "small": 3, "paper": 3}  # Tables 2–4's seeds per scale, every data set (its ``n_seeds`` default)
# Tables 2–4: the ablation (AL = adaptive loss, DA = dynamic aggregation)
CHECK_ROUNDS = 3  # rounds of the notebook's check that neither part is FedAvg (both trained in one float order)
ABLATION = {
    "AL only": ("feddual", {"dynamic_aggregation": False}),
    "DA only": ("feddual", {"adaptive_loss": False}),
    "AL + DA": ("feddual", {}),
}
# Table 1: final top-1 accuracy % (mean ± std over 3 runs); None = '*', failed to converge
TABLE1 = pd.DataFrame({
    "cifar10": [(46.68, 0.25), (47.58, 0.30), (48.44, 0.35), None, None, (43.97, 0.40), (46.57, 0.28), (42.26, 0.42),
                (48.70, 0.20)],
    "cifar100": [(26.88, 0.18), (26.89, 0.22), None, None, (26.88, 0.19), (18.27, 0.32), (28.50, 0.25),
                 (23.78, 0.31), (29.15, 0.24)],
    "fmnist": [(81.70, 0.20), (80.54, 0.28), None, None, (81.36, 0.23), (71.86, 0.45), (80.09, 0.27), (80.32, 0.33),
               (81.99, 0.21)],
}, index=list(METHODS))
# Tables 2 (FMNIST), 3 (CIFAR-10), 4 (CIFAR-100)
ABLATION_TABLES = pd.DataFrame({
    "fmnist": [(80.70, 0.22), (80.91, 0.25), (81.99, 0.18)],
    "cifar10": [(41.05, 0.12), (46.50, 0.15), (48.70, 0.20)],
    "cifar100": [(25.05, 0.11), (27.01, 0.17), (29.15, 0.24)],
}, index=list(ABLATION))
# Fig. 4's targets are not given: just under FedAvg's final accuracy [assumption, algorithms-seed §2.8]
TARGETS = {"fmnist": 0.80, "cifar10": 0.45, "cifar100": 0.25}


def label(dataset: str, scale: str) -> str:
    """How a figure names the data actually used."""
    if scale == "ci":
        return f"{dataset} (ci: {CI['dataset']})"
    if scale == "small" and dataset == "fmnist":
        return "fmnist (12k / 2k sample)"
    if scale == "small" and dataset == "cifar10":
        return "cifar10 (4k / 1k subset, random frozen VGG-16 trunk)"
    return dataset


def config(dataset: str, scale: str, method: str = "FedDUAL", seed: int = 0, device: str = "cpu",
           **changes) -> Config:
    """The config of ``method`` (a Table 1 or ablation name) on ``dataset`` at ``scale``; ``changes`` override any
    field (``algorithm_args`` are merged into the method's)."""
    if scale == "small" and dataset not in SMALL:
        raise ValueError(f"{dataset!r} has no offline stand-in at small scale; small covers {sorted(SMALL)}")
    values = {**COMMON, **PAPER[dataset]}
    if scale == "small":
        values.update(SMALL[dataset])
    elif scale == "ci":
        values.update(CI)
    algorithm, args = {**METHODS, **ABLATION}[method]
    values.update(algorithm=algorithm, algorithm_args={**args, **changes.pop("algorithm_args", {})}, seed=seed,
                  device=device)
    values.update(changes)
    return Config(**values)



# ---- the runs of each notebook (notebooks/feddual/), listed without running it: the plan and the tests read them
NOTES = {  # what a notebook computes besides its runs (not in the plan's minutes)
    "fig1_fig7_loss_landscapes": "plus 3 loss surfaces (a 51 × 51 grid on 5,000 training samples each at paper)",
    "fig2_fig6_gradient_norms": "plus per-client gradient norms at 10 snapshots of each run",
    "fig13_fig14_heterogeneity": "plus one partition per α (Federation)",
}
MODELS = {"fig1_fig7_loss_landscapes", "fig2_fig6_gradient_norms"}  # renders that read each run's model (plan.py)


def runs(notebook: str, scale: str, seed: int = 0, device: str = "cpu") -> dict[str, Config]:
    """Every config notebook ``notebook`` (its file name without .ipynb) runs at ``scale`` with its default parameters
    and ``seed``, by label."""
    from ..algorithms import ALGORITHMS

    def cfg(dataset, method="FedDUAL", **changes):
        return config(dataset, scale, method, seed=seed, device=device, **changes)

    def feddual(**args):  # only the options that differ from the algorithm's defaults, as the notebooks do
        defaults = {k: p.default for k, p in inspect.signature(ALGORITHMS["feddual"]).parameters.items()}
        return cfg("fmnist", algorithm_args={k: v for k, v in args.items() if v != defaults[k]})

    datasets = {"ci": ["fmnist"], "small": ["fmnist", "cifar10"], "paper": ["fmnist", "cifar10", "cifar100"]}[scale]
    three = [seed, seed + 1, seed + 2]  # every scale; at ci Table 1 runs CIFAR at the first seed only
    seeds = {d: three if scale != "ci" or d == "fmnist" else [seed] for d in datasets}
    ablation = list(range(seed, seed + SEEDS[scale]))  # Tables 2–4: every data set at SEEDS
    if notebook == "fig13_fig14_heterogeneity":
        alphas = {"ci": [0.1, 1.0], "small": [0.01, 0.1, 1.0], "paper": [0.01, 0.05, 0.1, 0.5, 1.0]}[scale]
        methods = list(METHODS) if scale == "paper" else ["FedAvg", "FedProx", "FedDUAL"]
        return seeded({f"α={a}/{m}": cfg("fmnist", m, partition_args={"alpha": a}) for a in alphas for m in methods},
                      three)
    if notebook == "fig1_fig7_loss_landscapes":
        return seeded({"FedAvg, IID": cfg("fmnist", "FedAvg", partition="iid", partition_args={}),
                       "FedAvg, non-IID": cfg("fmnist", "FedAvg"), "FedDUAL, non-IID": cfg("fmnist")}, three)
    if notebook == "fig2_fig6_gradient_norms":  # the first seed with snapshots (the figures), the others without
        out = {}
        for d in ("fmnist", "cifar10"):
            for name, changes in {"IID": {"partition": "iid", "partition_args": {}}, "non-IID": {}}.items():
                c = cfg(d, "FedAvg", **changes)
                out[f"{d}/{name}"] = c.replace(snapshots=math.ceil(c.rounds / 10))
                out |= seeded({f"{d}/{name}": c}, three[1:])
        return out
    if notebook == "fig5_layer_sets":
        layout = FlatModel(build_model(feddual().model, (1, 28, 28), 10)).layout
        sets = {"output bias": [t.name for t in layout.select("output") if t.name.endswith(".bias")],
                "output layer": "output", "last two layers": "last:2", "all tensors": "all"}
        arms = {name: feddual(dynamic=spec) for name, spec in sets.items()}
        return seeded({"FedAvg": cfg("fmnist", "FedAvg"), **arms}, three)
    if notebook == "fig9_fig12_eps_iterations":
        eps = {"ci": [1e-5, 1e-2], "small": [1e-5, 1e-4, 1e-3, 1e-2], "paper": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]}[scale]
        iterations = {"ci": [50, 150], "small": [50, 150, 500], "paper": [50, 100, 150, 200, 500, 1000]}[scale]
        return seeded({f"ε={e:g}": feddual(eps=e) for e in eps} | {f"{i} iterations": feddual(iterations=i)
                                                                   for i in iterations}, three)
    if notebook == "table1_fig3_fig4_methods":
        return {f"{d}/{m}/seed {s}": config(d, scale, m, seed=s, device=device)
                for d in datasets for m in METHODS for s in seeds[d]}
    if notebook == "table2_fig8_ablation":
        out = {f"{d}/{m}/seed {s}": config(d, scale, m, seed=s, device=device)
               for d in datasets for m in ABLATION for s in ablation}
        out["fmnist/free-support barycenter"] = cfg("fmnist", algorithm_args={"barycenter": "free_support"})
        for d in datasets:  # the notebook's check that neither part is FedAvg
            out[f"{d}/neither ({CHECK_ROUNDS} rounds)"] = cfg(d, rounds=CHECK_ROUNDS, algorithm_args={
                "adaptive_loss": False, "dynamic_aggregation": False})
            out[f"{d}/FedAvg ({CHECK_ROUNDS} rounds)"] = cfg(d, "FedAvg", rounds=CHECK_ROUNDS)
        return out
    raise ValueError(f"unknown FedDUAL notebook {notebook!r}; the notebooks are notebooks/feddual/*.ipynb")

"""FAdamGC's experimental settings (Sec. 6; algorithms-seed §3.7) at the three notebook scales, and the paper's numbers
(Tables 2 and 3).

The paper's Algorithm 1 and every numeric setting were lost in conversion: the algorithm is the reconstruction of
algorithms-seed §3.2–3.3 (its switches: ``correction`` before/after Adam = FAdamGC/FA-NT, ``tracked`` = τ,
``reset_moments``, the client Adam's ``bias_correction=False`` and ``amsgrad``), and N, S, K, α, τ, β's, targets
below are the spec's assumptions, not the paper's values.

"paper": ResNet-18 on CIFAR-10/100 and TinyImageNet, 100 clients, 10 a round, K = 50, batch 32, Dirichlet α = 0.1,
τ = S/2, Adam (0.9, 0.999, 1e-8) without bias correction. "small": the NIID-Bench CNN on a fixed 12,000 / 2,000
sample of Fashion-MNIST and on the 4,000 / 1,000 real CIFAR-10 subset in the data root, K = 20, 100 rounds, otherwise as
paper (CIFAR-100 and TinyImageNet are not available offline). "ci": 20 clients on the 5k MNIST sample, 3 rounds.

The simulated clock (Table 2's run time): a round costs K·``step_seconds`` of compute plus the bytes one client
receives and the mean client upload over the link. The paper's per-round times imply one ResNet-18 transfer
(11.2 M fp32 over 100 Mbit/s = 3.41 s) ≈ 341 local steps of 0.01 s (§3.6). Every scale keeps that ratio of one
model transfer to one local step, so the methods' ordering by time is the paper's cost model; at small scale the
link is slowed to match the CNN's size, so the minutes are not the paper's.
"""
from __future__ import annotations

from functools import cache

import pandas as pd

from ..config import Config
from ..models.registry import build_model, count_parameters
from . import seeded as at_seeds

STEP_SECONDS = 0.01  # one local step (A100, ResNet-18, batch 32: §3.6's fit)
PAPER_LINK_MBPS = 100.0

COMMON = dict(num_clients=100, clients_per_round=10, partition="dirichlet", partition_args={"phi": 0.1},
              local_steps=50, batch_size=32, rounds=3000, engine="auto")
PAPER = {
    "cifar10": dict(dataset="cifar10", model="resnet18"),
    "cifar100": dict(dataset="cifar100", model="resnet18"),
    "tinyimagenet": dict(dataset="tinyimagenet", model="resnet18"),
}
SMALL = {
    "fmnist": dict(dataset="fashion_mnist", dataset_args={"train_samples": 12_000, "test_samples": 2_000},
                   model="cnn", local_steps=20, rounds=100),
    "cifar10": dict(dataset="cifar10_subset", model="cnn", local_steps=20, rounds=100,
                    partition_args={"phi": 0.1, "min_size": 2}),  # 4,000 images: 10 each is never drawn at α = 0.1
}
CI = dict(dataset="mnist_5k", dataset_args={}, model="cnn", num_clients=20, clients_per_round=5, local_steps=5,
          rounds=3)
# Language rows: LoRA adapters (r = 16 on every linear projection) + a linear head are all that trains and travels;
# 20 clients, 5 a round, one local epoch, every sampled client tracks (τ = S) [PAPER]; Dirichlet α = 0.5 [assumption:
# at 0.1 no draw over SST-2's 2 classes gives 20 clients 2 sentences each]; the clock is the measured
# compute plus the traffic over 100 Mbit/s (compute dominates there, §3.6). Paper: GPT-2 (sequence length 128);
# small: all-MiniLM-L6-v2 from its PyPI package on a 1,000 / 400-sentence SST-2 sample (length 32, 20 rounds);
# ci: a tiny random transformer on 200 sentences.
LANGUAGE_COMMON = dict(num_clients=20, clients_per_round=5, local_steps=None, local_epochs=1, batch_size=16,
                       rounds=300, model="lora_transformer", step_seconds=None, link_mbps=100.0,
                       partition_args={"phi": 0.5, "min_size": 5})  # α = 0.1 over 2 classes leaves clients empty
LANGUAGE = {
    "paper": {d: dict(dataset=d, dataset_args={"tokenizer": "gpt2", "max_length": 128}, model_args={"base": "gpt2"})
              for d in ("sst2", "20newsgroups", "qnli", "qqp")},
    "small": {"sst2": dict(dataset="sst2", dataset_args={"tokenizer": "minilm", "max_length": 32,
                                                         "train_samples": 1_000, "test_samples": 400},
                           model_args={"base": "minilm"}, rounds=20)},
    "ci": {"sst2": dict(dataset="sst2", dataset_args={"tokenizer": "tiny_random", "max_length": 16,
                                                      "train_samples": 200, "test_samples": 100},
                        model_args={"base": "tiny_random"}, num_clients=4, clients_per_round=2, rounds=2)},
}

ADAM = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "bias_correction": False}
SPECIAL = {**ADAM, "beta1": 0.0, "beta2": 0.0}  # Theorem 5.2 / Table 3: steps bounded by η_l (§3.4)
# Table 2's seven methods: (algorithm, algorithm_args, client optimizer). τ = S/2 where a method tracks (None = S).
METHODS = {
    "FedAvg-M": ("fedavg_m", {}, "sgd"),
    "SCAFFOLD-M": ("scaffold_m", {}, "sgd"),
    "FedAdam": ("fedadam", {"tau": 1e-3}, "sgd"),
    "FedAMS": ("fedams", {"eps": 1e-3}, "sgd"),
    "LocalAdam": ("local_adam", {}, "adam"),
    "FA-NT": ("fa_nt", {}, "adam"),
    "FAdamGC": ("fadamgc", {}, "adam"),
}
TRACKING = ("FA-NT", "FAdamGC")
# Seeds per scale of Fig. 3, Fig. 4, Figs. 5–8 and Tables 2–3 (their notebooks' ``n_seeds`` default; 4 at paper as in
# the paper; Table 2's language rows too, although their 3 seeds take ≈ 75 min at small, over the 60-minute budget)
SEEDS = {"ci": 1, "small": 3, "paper": 4}
# Learning rates (η_l, η_g) per method. Appendix H's tables were lost: chosen on the spec's grids (Adam-based
# η_l ∈ {3e-4, 1e-3, 3e-3}, SGD-based η_l ∈ {0.01, 0.03, 0.1}, FedAdam/FedAMS η_g ∈ {1e-3, 3e-3, 1e-2, 3e-2} with
# η_l = 0.03) by notebooks/fadamgc/appendix_h_learning_rates.ipynb at small scale on Fashion-MNIST (best mean test
# accuracy over the last 10 of 60 rounds, seed 0), and used at every scale. FedAvg-M, SCAFFOLD-M and FedAMS chose
# their grid's edge.
LRS = {
    "FedAvg-M": (0.1, 1.0),
    "SCAFFOLD-M": (0.1, 1.0),
    "FedAdam": (0.03, 0.01),
    "FedAMS": (0.03, 0.03),
    "LocalAdam": (1e-3, 1.0),
    "FA-NT": (1e-3, 1.0),
    "FAdamGC": (3e-4, 1.0),  # 1e-3 first learns, then degrades after ~30 rounds; 3e-3 diverges to chance
}
GRID = {"adam": [3e-4, 1e-3, 3e-3], "sgd": [0.01, 0.03, 0.1], "server": [1e-3, 3e-3, 1e-2, 3e-2]}
# Rounds-to-target accuracies. Paper: the spec's guesses (the paper's targets were lost); small: calibrated on the
# first runs (just under what LocalAdam reaches in the round budget at α = 0.1).
TARGETS = {"paper": {"cifar10": 0.65, "cifar100": 0.35, "tinyimagenet": 0.25, "sst2": 0.88, "20newsgroups": 0.60,
                     "qnli": 0.80, "qqp": 0.75},
           "small": {"fmnist": 0.70, "cifar10": 0.30, "sst2": 0.70},
           "ci": {"fmnist": 0.30, "cifar10": 0.30, "sst2": 0.6}}


def _pm(text: str) -> tuple[float, float]:
    mean, std = text.split("±")
    return float(mean), float(std)


_T2_ROUNDS = {
    "CIFAR-10": "1014.5±250.3 544.3±59.9 2532.5±343.3 2388.8±286.6 589.5±74.0 394.8±31.3 310.0±16.8",
    "CIFAR-100": "998.5±88.5 621.8±55.4 1854.0±185.3 1654±156.4 678.3±40.6 530.3±17.6 323.8±16.3",
    "TinyImageNet": "215.5±10.4 242.2±15.4 543.2±45.2 463.5±35.7 177.3±8.3 157.0±6.4 66.3±4.4",
    "20NewsGroups": "245.5±27.6 214.0±17.7 247.0±8.1 224.5±5.4 156.8±7.8 155.0±7.0 143.3±4.1",
    "QNLI": "171.3±41.2 162.5±37.4 137.5±10.2 145.0±9.8 117.0±10.4 99.8±11.2 55.5±16.3",
    "QQP": "316.5±64.3 299.0±70.3 245.3±20.5 267.8±22.1 213.0±53.8 196.3±5.1 63.0±4.6",
    "SST-2": "150.5±36.1 129.8±32.5 84.3±4.2 78.8±4.4 47.0±5.8 48.8±8.4 30.3±7.3",
}
_T2_MINUTES = {
    "CIFAR-10": "182.6±45.1 157.8±17.38 303.9±41.2 286.7±34.4 70.7±8.9 82.7±6.6 65.1±3.5",
    "CIFAR-100": "179.7±15.9 180.3±16.1 222.5±22.2 198.5±18.8 81.4±4.9 111.4±3.7 68.0±3.4",
    "TinyImageNet": "38.8±1.9 70.2±4.5 65.2±5.4 55.6±4.3 21.3±1.0 33.0±1.3 13.9±0.9",
    "20NewsGroups": "34.4±3.9 35.1±2.9 31.6±1.0 28.7±0.7 20.1±1.0 22.6±1.0 20.9±0.6",
    "QNLI": "24.8±6.0 27.4±6.3 18.2±1.4 19.2±1.3 15.5±1.4 15.0±1.7 8.4±2.5",
    "QQP": "76.7±15.6 79.6±18.7 56.5±4.7 61.7±5.1 49.1±12.4 48.7±1.3 15.6±1.1",
    "SST-2": "127.7±36.1 114.7±32.5 74.5±4.2 69.7±4.4 41.3±5.8 43.1±8.4 26.8±7.3",
}


def _table(rows: dict[str, str]) -> pd.DataFrame:
    """Task × method cells as (mean, std) tuples (the conversion ran mean and std together: algorithms-seed §3.8)."""
    return pd.DataFrame({task: [_pm(c) for c in cells.split()] for task, cells in rows.items()}, index=list(METHODS)).T


TABLE2_ROUNDS = _table(_T2_ROUNDS)
TABLE2_MINUTES = _table(_T2_MINUTES)
# Table 3 (Appendix G): rounds, mean ± std; "*" = the special case β1 = β2 = 0
TABLE3_ROUNDS = pd.DataFrame({
    "LocalAdam": [(589.5, 74.0), (678.3, 40.6), (177.3, 8.3)],
    "FA-NT*": [(401.5, 33.9), (867.5, 25.3), (164.3, 6.7)],
    "FAdamGC*": [(358.8, 21.4), (527.0, 16.5), (85.5, 5.7)],
    "FA-NT": [(394.8, 31.3), (530.3, 17.6), (157.0, 6.4)],
    "FAdamGC": [(310.0, 16.8), (323.8, 16.3), (66.3, 4.4)],
}, index=["CIFAR-10", "CIFAR-100", "TinyImageNet"])
# Table 3's minutes: means only (its printed "±" repeat the round counts' stds, an error in the paper; §3.8)
TABLE3_MINUTES = pd.DataFrame({"LocalAdam": [72.38, 83.36, 21.78], "FA-NT*": [83.44, 180.27, 34.15],
                               "FAdamGC*": [74.56, 109.56, 17.77], "FA-NT": [82.07, 110.21, 32.63],
                               "FAdamGC": [64.42, 67.2, 13.78]}, index=["CIFAR-10", "CIFAR-100", "TinyImageNet"])
# which paper row a data set at each scale stands in for
PAPER_ROW = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "tinyimagenet": "TinyImageNet", "fmnist": "CIFAR-10",
             "sst2": "SST-2", "20newsgroups": "20NewsGroups", "qnli": "QNLI", "qqp": "QQP"}


def label(dataset: str, scale: str) -> str:
    """How a figure names the data actually used."""
    if scale == "ci":
        return f"{dataset} (ci: {'200 sentences, tiny random BERT' if dataset in LANGUAGE['ci'] else CI['dataset']})"
    if scale == "small" and dataset == "fmnist":
        return "Fashion-MNIST 12k/2k sample, CNN (stands in for CIFAR-10)"
    if scale == "small" and dataset == "cifar10":
        return "CIFAR-10 4k/1k subset, CNN"
    if scale == "small" and dataset == "sst2":
        return "SST-2 1k-sentence sample, all-MiniLM-L6-v2 + LoRA (stands in for GPT-2)"
    return f"{dataset}, GPT-2 + LoRA" if dataset in LANGUAGE["paper"] else f"{dataset}, ResNet-18"


@cache
def _bits(model: str, input_shape: tuple[int, ...], num_classes: int, **model_args) -> int:
    return 32 * count_parameters(build_model(model, input_shape, num_classes, **model_args))


@cache
def transfer_steps() -> int:
    """How many local steps one model transfer costs on the paper's clock: its ResNet-18 (CIFAR-10) over its link,
    in steps of ``STEP_SECONDS`` (341)."""
    return round(_bits("resnet18", (3, 32, 32), 10) / (PAPER_LINK_MBPS * 2**20) / STEP_SECONDS)


def clock(model: str, input_shape: tuple[int, ...], num_classes: int = 10, **model_args) -> dict:
    """``step_seconds`` and ``link_mbps`` under which one transfer of ``model`` costs ``transfer_steps()`` steps."""
    bits = _bits(model, input_shape, num_classes, **model_args)
    return {"step_seconds": STEP_SECONDS, "link_mbps": bits / 2**20 / (transfer_steps() * STEP_SECONDS)}


SHAPES = {"fashion_mnist": (1, 28, 28), "mnist_5k": (1, 28, 28), "cifar10_subset": (3, 32, 32),
          "cifar10": (3, 32, 32), "cifar100": (3, 32, 32), "tinyimagenet": (3, 64, 64)}
CLASSES = {"cifar100": 100, "tinyimagenet": 200}


def config(dataset: str, scale: str, method: str = "FAdamGC", seed: int = 0, device: str = "cpu",
           special: bool = False, **changes) -> Config:
    """The config of ``method`` (a Table 2 name) on ``dataset`` at ``scale``; ``special`` runs the client Adam with
    β1 = β2 = 0 (Table 3); ``changes`` override any field (``algorithm_args`` are merged into the method's)."""
    images = {"paper": PAPER, "small": SMALL, "ci": {d: CI for d in SMALL}}[scale]
    if dataset in LANGUAGE[scale]:
        values = {**COMMON, **LANGUAGE_COMMON, **LANGUAGE[scale][dataset]}
    elif dataset in images:
        values = {**COMMON, **images[dataset]}
    else:
        raise ValueError(f"{dataset!r} is not a {scale}-scale data set; {scale} covers "
                         f"{sorted(images) + sorted(LANGUAGE[scale])}")
    algorithm, args, optimizer = METHODS[method]
    lr, server_lr = LRS[method]
    values.update(algorithm=algorithm, optimizer=optimizer, lr=lr, server_lr=server_lr, seed=seed, device=device,
                  optimizer_args=(SPECIAL if special else ADAM) if optimizer == "adam" else {})
    args = {**args, **changes.pop("algorithm_args", {})}
    values.update(changes)
    language = values["model"] == "lora_transformer"
    if method in TRACKING and "tracked" not in args and not language:  # τ = S/2 (images); τ = S (language)
        args["tracked"] = max(1, values["clients_per_round"] // 2)
    if not language and "step_seconds" not in changes:
        values.update(clock(values["model"], SHAPES[values["dataset"]], CLASSES.get(values["dataset"], 10)))
    return Config(**values, algorithm_args=args)


# ---- the runs of each notebook (notebooks/fadamgc/), listed without running it: the plan and the tests read them
NOTES = {  # what a notebook computes besides its runs (not in the plan's minutes)
    "appendix_h_learning_rates": "its grid runs at small scale (60 rounds), whatever the scale",
    "fig1_correction_placement": "a 2-parameter toy (Federation): no runs, seconds on any device",
    "mechanism_stale_corrections": "at small scale whatever the scale; plus traces of its 3 runs (Federation)",
    "table3_special_case": "plus 5 traced rounds per data set and variant (Federation)",
}
MODELS = {"mechanism_stale_corrections"}  # renders that read each run's model or replay it (plan.py)


def runs(notebook: str, scale: str, seed: int = 0, device: str = "cpu") -> dict[str, Config]:
    """Every config notebook ``notebook`` (its file name without .ipynb) runs at ``scale`` with its default parameters
    and ``seed``, by label."""
    def cfg(dataset, method, at=scale, **changes):
        return config(dataset, at, method, seed=seed, device=device, **changes)

    def seeded(configs: dict[str, Config], n: int) -> dict[str, Config]:
        return at_seeds(configs, range(seed, seed + n))

    image = "cifar10" if scale == "paper" else "fmnist"
    images = ["cifar10", "cifar100", "tinyimagenet"]  # Tables 2–3 at paper scale; FMNIST alone below it
    small_grid = "ci" if scale == "ci" else "small"  # the learning-rate grid and the mechanism run below paper scale
    grid_rounds = 3 if scale == "ci" else 60
    if notebook == "appendix_h_learning_rates":
        out = {}
        for m, (_, _, optimizer) in METHODS.items():
            pairs = [(0.03, s) for s in GRID["server"]] if m in ("FedAdam", "FedAMS") else \
                [(lr, 1.0) for lr in GRID[optimizer]]
            out |= {f"{m}/η_l={lr}, η_g={g}": cfg("fmnist", m, small_grid, lr=lr, server_lr=g, rounds=grid_rounds)
                    for lr, g in pairs}
        return out
    if notebook == "fig1_correction_placement":
        return {}
    if notebook == "fig3_heterogeneity":
        n = SEEDS[scale]
        base = COMMON["partition_args"]["phi"]
        return seeded({f"α={a}/{m}": cfg(image, m, **({} if a == base else {"partition_args": {"phi": a}}))
                       for a in (0.1, 0.2, 0.5, 1.0) for m in ("LocalAdam", "FA-NT", "FAdamGC")}, n)
    if notebook == "fig4_tracking_subset":
        s = {"paper": 50, "small": 20, "ci": 4}[scale]
        taus = {"paper": [1, 5, 10, 25, 50], "small": [1, 2, 5, 10, 20], "ci": [1, 2, 4]}[scale]
        listed = {"LocalAdam": cfg(image, "LocalAdam", clients_per_round=s)}
        listed |= {f"τ={tau}/{m}": cfg(image, m, clients_per_round=s, algorithm_args={"tracked": tau})
                   for tau in taus for m in TRACKING}
        return seeded(listed, SEEDS[scale])
    if notebook == "figs5_8_sampling_rate":
        datasets = {"ci": ["cifar10"], "small": ["cifar10"], "paper": ["cifar100", "cifar10"]}[scale]
        rates = {"ci": [0.1, 0.25], "small": [0.05, 0.1, 0.2], "paper": [0.05, 0.1, 0.2]}[scale]
        steps = {"ci": [2, 5], "small": [10, 20], "paper": [20, 50]}[scale]
        listed = {}
        for d in datasets:
            base = cfg(d, "FAdamGC")
            for k in steps:
                for rate in rates:
                    s = max(1, round(rate * base.num_clients))
                    changes = {**({"clients_per_round": s} if s != base.clients_per_round else {}),
                               **({"local_steps": k} if k != base.local_steps else {})}
                    listed |= {f"{d}, K={k}, rate {rate}/{m}": cfg(d, m, **changes)
                               for m in ("LocalAdam", "FA-NT", "FAdamGC")}
        return seeded(listed, SEEDS[scale])
    if notebook == "mechanism_stale_corrections":
        out = {f"η_l={lr}": cfg("fmnist", "FAdamGC", small_grid, lr=lr, rounds=grid_rounds)
               for lr in (3e-4, 1e-3, 3e-3)}
        staleness = {"full": dict(num_clients=20, clients_per_round=20, algorithm_args={"tracked": 20}),
                     "partial": dict(num_clients=20, clients_per_round=4, algorithm_args={"tracked": 2})}
        stale = {}
        for setting, changes in staleness.items():
            for m in ("LocalAdam", "FAdamGC"):
                mine = {k: v for k, v in changes.items() if m == "FAdamGC" or k != "algorithm_args"}
                stale[f"{setting}/{m}"] = cfg("fmnist", m, small_grid, lr=1e-3, rounds=grid_rounds, **mine)
        return out | seeded(stale, 1 if scale == "ci" else 3)
    if notebook in ("table2_fig2_methods", "table2_language"):
        language = notebook == "table2_language"
        datasets = list(LANGUAGE[scale]) if language else images if scale == "paper" else ["fmnist"]
        return seeded({f"{d}/{m}": cfg(d, m) for d in datasets for m in METHODS}, SEEDS[scale])
    if notebook == "table3_special_case":
        datasets = images if scale == "paper" else ["fmnist"]
        variants = {"LocalAdam": ("LocalAdam", False), "FA-NT*": ("FA-NT", True), "FAdamGC*": ("FAdamGC", True),
                    "FA-NT": ("FA-NT", False), "FAdamGC": ("FAdamGC", False)}
        return seeded({f"{d}/{v}": cfg(d, m, special=special) for d in datasets
                       for v, (m, special) in variants.items()}, SEEDS[scale])
    raise ValueError(f"unknown FAdamGC notebook {notebook!r}; the notebooks are notebooks/fadamgc/*.ipynb")

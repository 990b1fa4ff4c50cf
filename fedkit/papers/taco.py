"""TACO's experimental settings (Table IV, Sec. V-A; algorithms-seed §1.10) at the three notebook scales, and the
paper's Table V numbers.

"paper" is the paper's setup; "small" keeps its structure (N = 20, s = 64, η_g = Kη_l, label groups) and the
paper's per-round step length K·η_l = 1 (K = 100, η_l = 0.01) with K = 20, η_l = 0.05 and 30 rounds, on the
real data in the data root, substituting the sets that are not available offline; "ci" runs in seconds on
embedded data. Below paper scale the sequential engine trains every timed run: it times each client
(time-to-accuracy, Figs. 2, 4, 5, Tables I and III). A run whose time is never read (``timed=False``: Figs. 6, 7,
Tables II, VI-VIII, which read accuracy, α or detection) takes the faster engine at every scale. At paper scale
the faster engine trains every run (``FAST_ENGINE``) and the time figures read a clock of each method's seconds per
local step, measured alone on the sequential engine (``step_clock``).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import torch

from .. import report
from ..config import Config
from ..errors import FedkitError
from ..history import History
from . import seeded as at_seeds

# Table IV and Sec. V-A: data set, model, partition, K, T (and η_l for Shakespeare)
PAPER = {
    "adult": dict(dataset="adult", model="mlp", partition="dirichlet", partition_args={"phi": 0.5},
                  local_steps=100, rounds=50),
    "mnist": dict(dataset="mnist", model="cnn", partition="label_groups", partition_args={},
                  local_steps=100, rounds=100),
    "fmnist": dict(dataset="fashion_mnist", model="cnn", partition="label_groups", partition_args={},
                   local_steps=100, rounds=100),
    "femnist": dict(dataset="femnist", model="cnn", partition="dirichlet", partition_args={"phi": 0.2},
                    local_steps=100, rounds=100),
    "svhn": dict(dataset="svhn", model="cnn", partition="label_groups", partition_args={},
                 local_steps=1000, rounds=100),
    "cifar10": dict(dataset="cifar10", model="cnn", partition="label_groups", partition_args={},
                    local_steps=1000, rounds=200),
    "cifar100": dict(dataset="cifar100", model="resnet18", partition="dirichlet", partition_args={"phi": 0.5},
                     local_steps=200, rounds=200),
    "shakespeare": dict(dataset="shakespeare", model="lstm", partition="natural",
                        partition_args={"min_samples": 64}, local_steps=200, rounds=50, lr=1.0),
}
COMMON = dict(num_clients=20, batch_size=64, lr=0.01, server_lr=1.0,  # η_g = Kη_l  ⇔  server_lr = 1
              engine="sequential")
# At paper scale the accuracy runs take the faster engine (vectorized on a GPU, its seeds in one stack); the time
# figures then read the simulated clock, each method's seconds per local step measured alone on the sequential engine
# (``step_clock``), instead of per-client timings of 20,000 local steps a run. An untimed run (``config(timed=False)``)
# takes it at every scale.
FAST_ENGINE = dict(engine="auto")
# Table V: the accuracy each data set's rounds-to-target counts to
TARGETS = {"adult": 0.78, "fmnist": 0.70, "svhn": 0.70, "cifar10": 0.50, "cifar100": 0.54, "shakespeare": 0.50}

# Offline substitutes at "small" scale (labelled on every figure that uses them).
SUBSTITUTE = {"svhn": "cifar10_subset", "cifar10": "cifar10_subset", "cifar100": "cifar10_subset"}
SMALL = dict(local_steps=20, rounds=30, lr=0.05)
# The offline LEAF sample holds 10 speaking roles; LEAF's 256-unit LSTM costs 0.38 s a step on one CPU core,
# a 64-unit one 0.10 s.
SMALL_SHAKESPEARE = dict(num_clients=10, model_args={"hidden": 64}, local_steps=5, rounds=15, lr=1.0)
CI = dict(dataset="mnist_5k", num_clients=10, local_steps=2, rounds=3, batch_size=32)
CI_TABULAR = dict(dataset="synthetic", dataset_args={"num_users": 10}, model="mlp", partition="dirichlet",
                  partition_args={"phi": 0.5, "min_size": 5})

# Table V's methods with the hyper-parameters of Sec. V-A (ζ = 0.1, α = 1, α_t = 0.2, β = 0.001).
METHODS = {
    "FedAvg": ("fedavg", {"weighting": "uniform"}),
    "FedProx": ("fedprox", {"mu": 0.1, "weighting": "uniform"}),
    "FoolsGold": ("foolsgold", {}),
    "Scaffold": ("scaffold", {"alpha": 1.0}),
    "STEM": ("stem", {"a": 0.2}),
    "FedACG": ("fedacg", {"beta": 0.001}),
    "TACO": ("taco", {}),
}
# Table V of the paper: final accuracy % (rounds to target; "100+" = not within T, "×" = failed)
TABLE5 = pd.DataFrame({
    "adult": ["78.88 (24)", "78.92 (24)", "83.50 (20)", "82.24 (10)", "78.83 (22)", "83.69 (11)", "83.80 (8)"],
    "fmnist": ["71.36 (85)", "67.14 (100+)", "73.09 (80)", "68.84 (100+)", "72.97 (69)", "70.91 (92)", "73.28 (59)"],
    "svhn": ["73.97 (37)", "36.69 (×)", "76.01 (21)", "19.58 (×)", "74.55 (16)", "75.51 (36)", "78.26 (17)"],
    "cifar10": ["51.84 (120)", "49.95 (200+)", "53.70 (58)", "43.18 (×)", "52.01 (112)", "52.81 (116)", "54.98 (44)"],
    "cifar100": ["54.39 (198)", "53.32 (200+)", "54.19 (200)", "53.33 (200+)", "54.69 (191)", "54.07 (197)",
                 "56.08 (170)"],
    "shakespeare": ["50.54 (45)", "28.07 (×)", "50.49 (45)", "51.95 (37)", "52.57 (34)", "42.91 (×)", "53.55 (22)"],
}, index=list(METHODS))
SLOW = 1.8  # Fig. 4's "o": more than 80 % over FedAvg's client time to the target
# The paper's headline ranges over Table V: TACO's final accuracy gain over FedAvg and its saving in client time to
# the target, in %
GAINS = {"accuracy gain %": (2.76, 58.68), "time saving %": (25.6, 62.7)}
# Seeds of the seeded notebooks per scale, their ``n_seeds`` default: Tables I, V (its three notebooks), VI, VII and
# VIII, Fig. 6 and Fig. 7's γ grid (its long MNIST runs at the first seed); one at ci, a quick look. Table II and the
# adult notebook keep their own lists
SEEDS = {"paper": 3, "small": 3, "ci": 1}

# Table I of the paper: client seconds per 100 local updates on an RTX 3090 (FoolsGold shares FedAvg's column, TACO
# has none), and the rounds each timing run lasts (round 1 is dropped: it pays for warm-up)
TABLE1 = {"fmnist": {"FedAvg": 0.323, "FedProx": 0.399, "Scaffold": 0.348, "STEM": 0.455, "FedACG": 0.401},
          "svhn": {"FedAvg": 0.441, "FedProx": 0.511, "Scaffold": 0.462, "STEM": 0.543, "FedACG": 0.513}}
TABLE1_METHODS = ("FedAvg", "FedProx", "Scaffold", "STEM", "FedACG", "TACO")
TABLE1_ROUNDS = {"ci": 3, "small": 6, "paper": 10}


# Table VII: 100 clients on adult, FEMNIST and CIFAR-100 with their Table IV settings; fewer rounds below paper
# scale, where a round costs five times as much as with 20 clients.
SCALABILITY = {"paper": dict(num_clients=100), "small": dict(num_clients=100, rounds=6),
               "ci": dict(num_clients=20, rounds=2)}


def scalability_config(dataset: str, scale: str, method: str = "TACO", seed: int = 0, device: str = "cpu",
                       timed: bool = True, **changes) -> Config:
    """Table VII's config: ``config`` with N = 100 clients (20 at ci scale); ``changes`` override any field."""
    return config(dataset, scale, method, seed=seed, device=device, timed=timed, **{**SCALABILITY[scale], **changes})


def label(dataset: str, scale: str) -> str:
    """How a figure names the data actually used, e.g. 'svhn (substitute: cifar10_subset)'."""
    if scale == "small" and dataset in SUBSTITUTE:
        return f"{dataset} (substitute: {SUBSTITUTE[dataset]})"
    if scale == "ci":
        return f"{dataset} (ci: {CI_TABULAR['dataset'] if dataset == 'adult' else CI['dataset']})"
    return dataset


def drawn_once(table: pd.DataFrame, scale: str) -> pd.DataFrame:
    """``table`` (a 'dataset' column) with each run drawn once: below paper scale svhn and cifar10 both run the
    cifar10_subset substitute, so only the last data set of those sharing one keeps its rows, its 'data used'
    naming the others whose runs they are."""
    if scale != "small":
        return table
    names = list(dict.fromkeys(table["dataset"]))
    sharing = {d: [o for o in names if SUBSTITUTE.get(o, o) == SUBSTITUTE.get(d, d)] for d in names}
    kept = table[[sharing[d][-1] == d for d in table["dataset"]]]
    also = {d: ", ".join(others[:-1]) for d, others in sharing.items() if len(others) > 1 and others[-1] == d}
    return kept.assign(**{"data used": [f"{used}; {also[d]}'s runs too" if d in also else used
                                        for d, used in zip(kept["dataset"], kept["data used"])]})


def config(dataset: str, scale: str, method: str = "TACO", seed: int = 0, device: str = "cpu", timed: bool = True,
           **changes) -> Config:
    """The config of ``method`` on ``dataset`` at ``scale``; ``changes`` override any field. ``timed=False``: no
    figure reads the run's client times, so it takes the faster engine below paper scale too."""
    values = {**COMMON, **PAPER[dataset]}
    if scale == "paper" or not timed:
        values.update(FAST_ENGINE)
    if scale == "small":
        values.update(SMALL, dataset=SUBSTITUTE.get(dataset, values["dataset"]))
        if dataset == "shakespeare":
            values.update(SMALL_SHAKESPEARE)
        if values["model"] == "resnet18":
            values.update(model="cnn")  # ResNet-18 on 2 CPU cores is out of budget
    elif scale == "ci":
        values.update(CI, **(CI_TABULAR if dataset == "adult" else {}))
        if values["model"] not in ("mlp", "cnn"):
            values.update(model="cnn", partition="label_groups", partition_args={}, lr=0.01)
    algorithm, args = METHODS[method]
    values.update(algorithm=algorithm, algorithm_args=dict(args), seed=seed, device=device)
    values.update(changes)
    return Config(**values)


def target(dataset: str, scale: str, fedavg_final: float) -> float:
    """Table V's target accuracy; below paper scale, where those are out of reach, the paper's own recipe
    (each target sits just under FedAvg's final accuracy: 78 vs 78.88 %, ..., 70 vs 73.97 %): 95 % of FedAvg's
    final accuracy, rounded down to a whole percent."""
    if scale == "paper":
        return TARGETS[dataset]
    return float(np.floor(95 * fedavg_final) / 100)


def step_clock(datasets, device: str = "cpu", rounds: int = 2, steps: int = 10, seeds=(0,)) -> pd.DataFrame:
    """Each Table V method's seconds per local step at paper settings on ``device``, every client timed alone on the
    sequential engine (``probe.calibrate_step_seconds``: the median over ``rounds`` rounds, after a warm-up round, of
    a round's client seconds over its ``steps`` local steps per client); one row per (data set, method, seed), each
    seed a measurement of its own (its partition and batches), so that a clock's own noise shows as seed spread."""
    from ..probe import calibrate_step_seconds

    cfgs = {(d, m, s): config(d, "paper", m, seed=s, device=device, engine="sequential")
            for s in seeds for d in datasets for m in METHODS}
    seconds = calibrate_step_seconds(cfgs, rounds=rounds, steps=steps)
    where = (torch.cuda.get_device_name(device) if device.startswith("cuda")
             else f"cpu, {torch.get_num_threads()} threads")
    return pd.DataFrame([{"dataset": d, "method": m, "step_seconds": v, "device": where, "rounds": rounds,
                          "steps": steps, "seed": s} for (d, m, s), v in seconds.items()])


def on_clock(histories: dict, clock: pd.DataFrame) -> dict:
    """``histories`` keyed ((data set, method), seed) on the step clock: each round's slowest-client time
    (``client_seconds_max``, what Figs. 2, 4, 5 and Table V's time columns add up) becomes the round's largest local
    step count times ``step_seconds`` of the clock. The faster engine trains the clients stacked and does not time
    them one by one."""
    seconds = _clock_index(clock)
    return {key: clocked(h, step_seconds(clock, *key[0], key[1], seconds)) for key, h in histories.items()}


def _clock_index(clock: pd.DataFrame) -> pd.Series:
    seconds = clock.set_index(["dataset", "method", "seed"])["step_seconds"]
    if seconds.index.has_duplicates:
        raise FedkitError(f"the step clock has more than one row for {list(seconds.index[seconds.index.duplicated()])}")
    return seconds


def step_seconds(clock: pd.DataFrame, name: str, method: str, seed: int, index: pd.Series | None = None) -> float:
    """The seconds per local step of ``method`` on data set ``name`` at ``seed`` in ``clock`` (``step_clock``'s rows);
    a clock measured at one seed only times every seed. ``index``: the clock already indexed (``on_clock``)."""
    seconds = _clock_index(clock) if index is None else index
    row = (name, method, int(clock["seed"].iloc[0]) if clock["seed"].nunique() == 1 else seed)
    if row not in seconds.index:
        raise FedkitError(f"the step clock has no row for {method} on {name} at seed {row[2]}; it holds "
                          f"{list(seconds.index)}")
    return float(seconds[row])


def clocked(history: History, step_seconds: float) -> History:
    """``history`` with each round's ``client_seconds_max`` = its largest local step count × ``step_seconds``."""
    steps = history.clients.groupby("round")["steps"].max()
    rounds = history.rounds.assign(client_seconds_max=history.rounds["round"].map(steps * step_seconds))
    return dataclasses.replace(history, rounds=rounds)


FIG7_GAMMAS = (0.0, 0.001, 0.01, 0.1, 1.0)  # Fig. 7's grid of the maximum correction γ (Sec. V-E)


def nearest_one_over_k(k: int) -> float:
    """Fig. 7's γ nearest 1/K on a log scale, where the paper finds the best γ (γ* ≈ 1/K; γ = 0 has no logarithm)."""
    return min(FIG7_GAMMAS[1:], key=lambda g: abs(math.log(g * k)))


def run_length_configs(scale: str, seed: int = 0, device: str = "cpu") -> dict[float, Config]:
    """Fig. 7's long MNIST runs (TACO, detection off) by γ: 0, 1/K and 1, past the grid's T (2T at ci, 100 rounds at
    small, 3T at paper). They test every d-th round, d the largest divisor of T up to T/3, so that round T, where the
    notebook checks them against the grid, is tested (paper: d = 25, not 33)."""
    base = config("mnist", scale, seed=seed, device=device, timed=False, algorithm_args={"detect": False})
    rounds = {"ci": 2 * base.rounds, "small": 100, "paper": 3 * base.rounds}[scale]
    every = next(d for d in range(max(1, base.rounds // 3), 0, -1) if base.rounds % d == 0)
    return {gamma: base.replace(rounds=rounds, eval_every=every, algorithm_args={"gamma": gamma, "detect": False})
            for gamma in (0.0, 1 / base.local_steps, 1.0)}


def available(datasets, scale: str) -> tuple[list[str], dict[str, str]]:
    """The data sets (Table V's names) whose data is under the data root at ``scale``, and why each other one is not
    (checked without downloading): a notebook runs what is here and names what is missing."""
    from ..plan import Planner

    planner = Planner("cpu")
    why = {d: planner.missing(config(d, scale)) for d in datasets}
    return [d for d in datasets if why[d] is None], {d: w for d, w in why.items() if w is not None}


def seconds_per_100_updates(history: History) -> float:
    """Table I's number for one run: per round, the clients' compute seconds over their local steps (summed over the
    clients), times 100; the median over the rounds after the first (round 1 pays for lazy initialisation)."""
    per_round = history.clients.groupby("round")[["seconds", "steps"]].sum().sort_index().iloc[1:]
    return 100 * float((per_round["seconds"] / per_round["steps"]).median())


def table1(rows: pd.DataFrame) -> pd.DataFrame:
    """Table I from one row per (dataset, method, seed) holding 'seconds per 100 updates': the paper's seconds
    beside each, and each method's overhead over FedAvg's in % at the same data set and seed (the paper's likewise,
    NaN where the paper has no column)."""
    key, value = ["dataset", "seed"], "seconds per 100 updates"
    base = rows.loc[rows["method"] == "FedAvg", key + [value]].rename(columns={value: "fedavg"})
    out = rows.merge(base, on=key, how="left", validate="many_to_one")
    out["paper seconds"] = [TABLE1.get(d, {}).get(m, np.nan) for d, m in zip(out["dataset"], out["method"])]
    out["overhead %"] = 100 * (out[value] / out["fedavg"] - 1)
    paper_base = out["dataset"].map({d: v["FedAvg"] for d, v in TABLE1.items()})
    out["paper overhead %"] = 100 * (out["paper seconds"] / paper_base - 1)
    return out.drop(columns="fedavg")


def target_tables(histories: dict, scale: str) -> pd.DataFrame:
    """Table V's target table (``report.target_table``) at each seed of ``histories``, keyed ((data set, method),
    seed) as ``fedkit.seeds.run_seeds`` gives them: one row per (data set, method, seed), a ``seed`` column after
    ``method``; each seed's target comes from its own FedAvg run."""
    frames = []
    for s in dict.fromkeys(s for _, s in histories):
        at_seed = {key: h for (key, run_seed), h in histories.items() if run_seed == s}
        table = report.target_table(at_seed, "FedAvg", lambda d, fedavg: target(d, scale, fedavg.final_accuracy),
                                    TABLE5, slow=SLOW, label=lambda d: label(d, scale))
        table.insert(table.columns.get_loc("method") + 1, "seed", s)
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


# ---- the runs of each notebook (notebooks/taco/), listed without running it: the plan and the tests read them
TOY = {"centers": [[2.0, 0.0], [-1.0, 3.0], [0.5, -2.0], [-3.0, -1.0]],
       "curvatures": [[[2.0, 0.3], [0.3, 0.5]], [[0.4, 0.0], [0.0, 1.5]], [[1.0, -0.4], [-0.4, 1.2]],
                      [[0.3, 0.1], [0.1, 0.2]]]}
NOTES = {  # what a notebook computes besides its runs (not in the plan's minutes)
    "adult_paper_settings": "plus eq. 7 traces (Federation, a few rounds) and the partition's label camps",
    "fig1_fig3_toy": "plus eq. 7's factors of one toy run (Federation)",
    "table1_compute_time": "timing runs on the sequential engine, never cached: they rerun every time",
}
MODELS = {"fig1_fig3_toy"}  # renders that read each run's model (plan.py)


def runs(notebook: str, scale: str, seed: int = 0, device: str = "cpu") -> dict[str, Config]:
    """Every config notebook ``notebook`` (its file name without .ipynb) runs at ``scale`` with its default parameters
    and ``seed``, by label. A label ending in '?' is run only where an earlier result calls for it (TACO with
    detection off, where TACO expelled a benign client)."""
    def cfg(dataset, method="TACO", **changes):
        return config(dataset, scale, method, seed=seed, device=device, **changes)

    def untimed(dataset, method="TACO", **changes):  # a run whose client times no figure reads
        return cfg(dataset, method, timed=False, **changes)

    def seeded(configs: dict[str, Config], n: int) -> dict[str, Config]:
        return at_seeds(configs, range(seed, seed + n))

    n_seeds = SEEDS[scale]

    def table5(datasets):
        out = {f"{d}/{m}": cfg(d, m) for d in datasets for m in METHODS}
        return out | {f"{d}/TACO, detection off?": cfg(d, algorithm_args={"detect": False}) for d in datasets}

    def each_seed(configs: dict[str, Config], n: int) -> dict[str, Config]:
        return at_seeds(configs, range(seed, seed + n), seed_first=True)

    if notebook == "adult_paper_settings":
        seeds = {"ci": [0, 1], "small": [0, 1, 2], "paper": [0, 1, 2, 3, 4]}[scale]
        base = (lambda m, **c: config("adult", "ci", m, engine="vectorized", device=device, rounds=6, **c)) \
            if scale == "ci" else (lambda m, **c: config("adult", "paper", m, engine="vectorized", device=device, **c))
        many, off, iid = (20 if scale == "ci" else 100), {"detect": False}, dict(partition="iid", partition_args={})
        labels = {"FedAvg": base("FedAvg"), "FedACG": base("FedACG"), "TACO": base("TACO"),
                  "TACO, detection off": base("TACO", algorithm_args=off),
                  "TACO, uniform agg.": base("TACO", algorithm_args={"tailored_aggregation": False}),
                  "FedAvg, IID": base("FedAvg", **iid), "TACO, IID": base("TACO", **iid),
                  f"TACO, N={many}": base("TACO", num_clients=many)}
        if scale != "small":
            labels[f"TACO, N={many}, detection off"] = base("TACO", num_clients=many, algorithm_args=off)
        probe = labels["FedAvg"].replace(rounds=3)
        out = {f"engine probe/{e}": probe.replace(engine=e) for e in ("vectorized", "sequential")}
        return out | {f"{label}/seed {s}": c.replace(seed=s) for label, c in labels.items()
                      for s in ([seed] if scale == "small" and label == "FedAvg, IID" else seeds)}
    if notebook == "fig1_fig3_toy":
        rounds = {"ci": 15, "small": 40, "paper": 100}[scale]
        return {f"{correction} correction/γ={gamma}": Config(
            dataset="quadratic", dataset_args=TOY, partition="natural", partition_args={}, num_clients=4,
            model="quadratic", model_args={"init": [3.0, 3.0]}, algorithm="taco",
            algorithm_args={"gamma": gamma, "correction": correction, "detect": False, "tailored_aggregation": False},
            rounds=rounds, local_steps=10, batch_size=8, lr=0.1, seed=seed, device=device)
            for correction in ("uniform", "tailored") for gamma in (0.0, 0.5, 1.0, 1.5, 2.0, 2.5)}
    if notebook == "fig6_tailored_baselines":  # both data sets at every seed
        out = {}
        for d in ("fmnist", "svhn"):
            for m in ("FedProx", "Scaffold"):
                plain = untimed(d, m)
                tailored = plain.replace(algorithm="tailored",
                                         algorithm_args={"base": plain.algorithm, **plain.algorithm_args})
                out |= seeded({f"{d}/{m}": plain, f"{d}/{m}-TACO": tailored}, n_seeds)
        return out
    if notebook == "fig7_gamma_sensitivity":  # the γ grid at every seed, the long MNIST runs at the first seed
        grid = {}
        for d in ("mnist", "fmnist", "cifar10"):
            for gamma in FIG7_GAMMAS:
                c = untimed(d, algorithm_args={"gamma": gamma, "detect": False})
                grid[f"{d}/γ={gamma}"] = c.replace(eval_every=c.rounds)
        out = seeded(grid, n_seeds)
        for gamma, c in run_length_configs(scale, seed, device).items():
            out[f"mnist, {c.rounds} rounds/γ={gamma:g}"] = c
        return out
    if notebook == "table1_compute_time":  # one warm-up per data set, then every method at each seed
        out = {}
        for d in TABLE1:
            out[f"{d}/warm-up"] = cfg(d, "FedAvg", engine="sequential", rounds=1)
            out |= seeded({f"{d}/{m}": cfg(d, m, engine="sequential", rounds=TABLE1_ROUNDS[scale])
                           for m in TABLE1_METHODS}, n_seeds)
        return out
    if notebook == "table2_alpha_groups":
        return seeded({d: untimed(d, algorithm_args={"detect": False}, threat="freeloaders",
                                  threat_args={"fraction": 0.4})
                       for d in ("mnist", "fmnist", "svhn", "cifar10")}, 2 if scale == "ci" else 3)  # its own list
    if notebook == "table5_fig2_fig4_fig5_label_groups":
        out = each_seed(table5(["fmnist", "svhn", "cifar10"]), n_seeds)
        grids = {"FedProx": ("mu", [0.001, 0.01, 0.1]), "FedACG": ("beta", [0.001, 0.01, 0.1]),
                 "STEM": ("a", [0.05, 0.1, 0.2])}
        if scale != "small":  # Fig. 2's grids
            for d in ("fmnist", "svhn"):
                for m, (option, values) in grids.items():
                    base = cfg(d, m)
                    out |= {f"{d}/{m}, {option}={v}": base.replace(algorithm_args={**base.algorithm_args, option: v})
                            for v in values}
        return out
    if notebook == "table5_fig4_fig5_shakespeare":  # every run at each seed ("seed s/" first: "?" stays last)
        return each_seed(table5(["shakespeare"]), n_seeds)
    if notebook == "table5_fig4_fig5_table3_dirichlet":
        return each_seed(table5(["adult", "cifar100"]), n_seeds)
    if notebook == "table6_ablation":
        out = {}
        for d, phi in (("femnist", 0.2), ("femnist", 0.5), ("adult", 0.1), ("adult", 0.5)):
            base = untimed(d)
            split = {**base.partition_args, "phi": phi} if base.partition == "dirichlet" else base.partition_args
            if base.dataset == "adult" and phi < 0.5:
                split = {**split, "min_size": 5}
            listed = {f"{d} Dir({phi})/corr {correction}, agg {aggregation}": base.replace(
                partition_args=split, algorithm_args={"correction": "tailored" if correction else "none",
                                                      "tailored_aggregation": aggregation, "detect": False})
                for correction in (False, True) for aggregation in (False, True)}
            listed[f"{d} Dir({phi})/FedAvg"] = base.replace(partition_args=split, algorithm="fedavg",
                                                            algorithm_args={"weighting": "uniform"})
            out |= seeded(listed, n_seeds)
        return out
    if notebook == "table7_scalability":
        variants = {**{m: (m, {}) for m in METHODS},
                    "TACO, detection off": ("TACO", {"algorithm_args": {"detect": False}})}
        return seeded({f"{d}/{label}": scalability_config(d, scale, m, seed=seed, device=device, timed=False, **changes)
                       for d in ("adult", "femnist", "cifar100") for label, (m, changes) in variants.items()},
                      n_seeds)
    if notebook == "table8_freeloader_detection":
        kappas, divisors = ([0.6, 1.0], {"T/5": 5}) if scale == "ci" else \
            ([0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], {"T/10": 10, "T/5": 5, "T/2": 2})
        base = untimed("fmnist", threat="freeloaders", threat_args={"fraction": 0.4})
        out = {}
        for name, d in divisors.items():  # every λ at every seed
            cells = {f"λ={name}/κ={kappa}": base.replace(algorithm_args={"kappa": kappa, "lam": -(-base.rounds // d)},
                                                         eval_every=base.rounds) for kappa in kappas}
            out |= seeded(cells, n_seeds)
        return out
    raise ValueError(f"unknown TACO notebook {notebook!r}; the notebooks are notebooks/taco/*.ipynb")

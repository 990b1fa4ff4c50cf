"""DRAG's experimental settings (Sec. V; algorithms-seed §4.7–4.8) at the three notebook scales.

Two kinds of experiment. Client drift (Figs. 3–4): q = 1 (every client holds only its home labels), U = 5 local SGD
steps of η = 0.1, full or partial participation, every method stops once its test accuracy reaches the target.
Byzantine (Figs. 5–8): M = S = 10 clients, A attackers uploading p·g with p ~ N(0, 3) fresh per round
(``random_scaling``), low (q = 1/M, IID) or high (q = 1) heterogeneity, FedAvg vs FLTrust vs robust DRAG, both
defences holding the same root set of N_root uniform training samples.

"paper": EMNIST-balanced with the 784-500-47 network, CIFAR-10 with the TF-tutorial CNN (2 conv + 3 FC), the
paper's M, S, c, α, μ, β; targets 80 % / 70 % with round caps of 1000 / 2000 and 300 Byzantine rounds (the caps
and the batch size 64 are the spec's assumptions: the paper gives neither); where EMNIST-balanced is not under the
data root, full MNIST stands in at that structure (``PAPER_STAND_INS``, named on every figure). "small": full
MNIST (60k / 10k) stands in for EMNIST-balanced (same network, 10 classes), and the 4,000 / 1,000 real CIFAR-10
subset with the NIID-Bench CNN (2 conv + 3 FC as well, 13× cheaper than the TF CNN on this CPU) for CIFAR-10; its
root set keeps the paper's share of the training data (3000 / 50,000 = 6 % → 240 images). Small targets, calibrated
on first runs (seed 0, full participation): MNIST 90 % (FedAvg reaches 80 % in 15 rounds on MNIST, too easy to tell
methods apart; 90 % in 213), the CIFAR-10 subset 30 % (FedAvg's best in 300 rounds is 31 %).
"ci": the 5k MNIST sample, a few rounds.
"""
from __future__ import annotations

from ..config import Config
from . import seeded as at_seeds

COMMON = dict(local_steps=5, lr=0.1, batch_size=64, partition="qskew", engine="auto")
DATA = {  # data set and model standing in for each paper data set, per scale
    "paper": {"emnist": dict(dataset="emnist", model="fc500"), "cifar10": dict(dataset="cifar10", model="tf_cnn")},
    "small": {"emnist": dict(dataset="mnist", model="fc500"), "cifar10": dict(dataset="cifar10_subset", model="cnn")},
    "ci": {"emnist": dict(dataset="mnist_5k", model="fc500"), "cifar10": dict(dataset="mnist_5k", model="cnn")},
}
PAPER_ROOT = 3000  # N_root of §V, drawn from CIFAR-10's 50,000 training images
ROOT = {"paper": {"emnist": PAPER_ROOT, "cifar10": PAPER_ROOT},
        "small": {"emnist": PAPER_ROOT, "cifar10": round(PAPER_ROOT / 50_000 * 4_000)},  # the subset: the same 6 %
        "ci": {"emnist": 200, "cifar10": 200}}
# Client drift (Figs. 3–4): clients, clients per round (full / partial), target, round cap
DRIFT = {
    "paper": {"emnist": dict(num_clients=40, partial=10, target=0.80, rounds=1000),
              "cifar10": dict(num_clients=20, partial=5, target=0.70, rounds=2000)},
    "small": {"emnist": dict(num_clients=40, partial=10, target=0.90, rounds=300),
              "cifar10": dict(num_clients=20, partial=5, target=0.30, rounds=300)},
    "ci": {"emnist": dict(num_clients=8, partial=4, target=0.5, rounds=4),
           "cifar10": dict(num_clients=8, partial=4, target=0.3, rounds=3)},
}
# A second small stand-in for CIFAR-10's client-drift figure (Fig. 4), where the 4,000-image subset stays near chance
# under q = 1: a fixed 12,000 / 2,000 Fashion-MNIST sample with the same CNN, target calibrated like the others
STAND_INS = {"fashion_mnist": dict(dataset="fashion_mnist", dataset_args={"train_samples": 12_000,
                                                                          "test_samples": 2_000}, model="cnn")}
STAND_IN_TARGETS = {"fashion_mnist": 0.70}
# Paper scale where EMNIST-balanced is not under the data root: full MNIST stands in at the paper's own structure (M,
# S, U, η, c, α, the attack, the round caps), with the small scale's calibrated 90 % target (80 % gives no contrast
# on MNIST); figures, CSVs and the ledger name it
PAPER_STAND_INS = {"emnist": dict(dataset="mnist", model="fc500")}
BYZANTINE_ROUNDS = {"paper": 300, "small": 150, "ci": 3}
BYZANTINE_CLIENTS = 10  # M = S
ATTACKERS = {"emnist": 4, "cifar10": 1}  # A of them
VARIANCE = 3.0  # σ² of p

# The methods of each figure: (algorithm, algorithm_args). FedAvg and FedProx average uniformly (eq. 4: 1/S).
ADABEST_BETA = {"emnist": 0.8, "cifar10": 0.2}
DRAG_ARGS = {("emnist", "full"): {"c": 0.25, "alpha": 1.0}, ("emnist", "partial"): {"c": 0.25, "alpha": 0.6},
             ("cifar10", "full"): {"c": 0.1, "alpha": 1.0}, ("cifar10", "partial"): {"c": 0.1, "alpha": 0.2}}
DRIFT_METHODS = ("FedAvg", "FedProx", "SCAFFOLD", "AdaBest", "DRAG")
BYZANTINE_METHODS = ("FedAvg", "FLTrust", "DRAG")
ROBUST_C = 0.5  # the paper gives no c for robust DRAG: 0.5 maps an exactly reversed upload to +r (§4.3, Remark 3)
C_SWEEP = (0.1, 0.25, 0.5, 1.0)
SEEDS = {"ci": 1, "small": 3, "paper": 3}  # Figs. 3–8 (their notebooks' ``n_seeds`` default); the c sweep: the first
FIGURES = {"fig3a": ("emnist", "full"), "fig3b": ("emnist", "partial"), "fig4a": ("cifar10", "full"),
           "fig4b": ("cifar10", "partial"), "fig5": ("cifar10", "low"), "fig6": ("cifar10", "high"),
           "fig7": ("emnist", "low"), "fig8": ("emnist", "high")}
# What the paper's text reads off each figure (there are no tables): the claims the notebooks check
CLAIMS = {
    "fig3a": "DRAG clearly fastest to 80 %, especially with full participation",
    "fig3b": "AdaBest sensitive to participation; SCAFFOLD solid; DRAG best",
    "fig4a": "DRAG reaches 70 % in about 1/4 of FedAvg's rounds",
    "fig4b": "DRAG reaches 70 % in about 1/2 of FedAvg's rounds; SCAFFOLD and FedProx close to FedAvg",
    "fig5": "FedAvg collapses; FLTrust converges; DRAG more stable than FLTrust",
    "fig6": "FedAvg degrades; FLTrust does not converge (benign clients get trust 0); DRAG keeps working",
    "fig7": "FedAvg and FLTrust fine under low heterogeneity; DRAG best",
    "fig8": "FLTrust limited under high heterogeneity; DRAG best",
}


def paper_stands_in(data: str) -> bool:
    """Whether MNIST stands in for the paper's ``data`` ("emnist" or "cifar10") at paper scale: where EMNIST-balanced
    is not under the data root (checked without downloading)."""
    if data not in PAPER_STAND_INS:
        return False
    from ..data import load_dataset
    from ..errors import DataNotFoundError
    from ..plan import offline

    try:
        with offline():
            load_dataset(DATA["paper"][data]["dataset"])
    except DataNotFoundError:
        return True
    return False


def data_of(data: str, scale: str) -> dict:
    """The data set and model that run for the paper's ``data`` at ``scale`` (``DATA``, or the paper-scale
    stand-in)."""
    return PAPER_STAND_INS[data] if scale == "paper" and paper_stands_in(data) else DATA[scale][data]


def classes(data: str, scale: str) -> int:
    """The number of classes of the data set that runs for the paper's ``data`` at ``scale``."""
    return 47 if data_of(data, scale)["dataset"] == "emnist" else 10


def _method(method: str, data: str, participation: str, root: int) -> tuple[str, dict]:
    if method == "FedAvg":
        return "fedavg", {"weighting": "uniform"}
    if method == "FedProx":
        return "fedprox", {"mu": 0.2, "weighting": "uniform"}
    if method == "SCAFFOLD":
        return "scaffold", {}
    if method == "AdaBest":
        return "adabest", {"mu": 0.02, "beta": ADABEST_BETA[data]}
    if method == "FLTrust":
        return "fltrust", {"root_samples": root}
    if method == "DRAG" and participation in ("low", "high"):
        return "drag_robust", {"c": ROBUST_C, "root_samples": root}
    if method == "DRAG":
        return "drag", DRAG_ARGS[data, participation]
    raise ValueError(f"unknown DRAG-paper method {method!r}; known: {sorted(set(DRIFT_METHODS + BYZANTINE_METHODS))}")


def config(figure: str, scale: str, method: str = "DRAG", seed: int = 0, device: str = "cpu", **changes) -> Config:
    """The config of ``method`` in ``figure`` ("fig3a" … "fig8") at ``scale``; ``changes`` override any field
    (``algorithm_args`` are merged into the method's, e.g. {"c": 0.25} for robust DRAG's sweep)."""
    if figure not in FIGURES:
        raise ValueError(f"unknown DRAG figure {figure!r}; known: {sorted(FIGURES)}")
    if scale not in DATA:
        raise ValueError(f"unknown scale {scale!r}; known: {sorted(DATA)}")
    data, setting = FIGURES[figure]
    algorithm, args = _method(method, data, setting, ROOT[scale][data])
    values = {**COMMON, **data_of(data, scale), "seed": seed, "device": device}
    if setting in ("full", "partial"):
        drift = DRIFT[scale][data]
        values.update(num_clients=drift["num_clients"], partition_args={"q": 1.0}, rounds=drift["rounds"],
                      stop_accuracy=target(figure, scale),
                      clients_per_round=drift["num_clients"] if setting == "full" else drift["partial"])
    else:
        values.update(num_clients=BYZANTINE_CLIENTS, clients_per_round=BYZANTINE_CLIENTS,
                      rounds=BYZANTINE_ROUNDS[scale], threat="random_scaling",
                      partition_args={"q": 1.0 if setting == "high" else 1 / BYZANTINE_CLIENTS},  # low: q = 1/M, IID
                      threat_args={"count": ATTACKERS[data], "variance": VARIANCE})
    args = {**args, **changes.pop("algorithm_args", {})}
    values.update(changes)
    return Config(**values, algorithm=algorithm, algorithm_args=args)


def target(figure: str, scale: str) -> float:
    """The test accuracy at which a client-drift figure's runs stop (at paper scale on the MNIST stand-in, the small
    scale's calibrated target)."""
    data = FIGURES[figure][0]
    return DRIFT["small" if scale == "paper" and paper_stands_in(data) else scale][data]["target"]


def label(figure: str, scale: str, stand_in: str | None = None) -> str:
    """How a figure names the data and model actually used."""
    if stand_in == "fashion_mnist":
        return "Fashion-MNIST 12k/2k sample, NIID-Bench CNN (stands in for CIFAR-10)"
    data = FIGURES[figure][0]
    if scale == "paper" and paper_stands_in(data):
        return "MNIST 60k/10k, FC-500 (stands in for EMNIST-balanced at the paper's structure)"
    if scale == "paper":
        return "EMNIST-balanced, FC-500" if data == "emnist" else "CIFAR-10, TF CNN (2 conv + 3 FC)"
    if scale == "small":
        return ("MNIST 60k/10k, FC-500 (stands in for EMNIST-balanced)" if data == "emnist"
                else "CIFAR-10 4k/1k subset, NIID-Bench CNN (2 conv + 3 FC)")
    return f"ci: mnist_5k, {DATA['ci'][data]['model']}"


# ---- the runs of each notebook (notebooks/drag/), listed without running it: the plan and the tests read them
NOTES = {  # what a notebook computes besides its runs (not in the plan's minutes)
    "fig1_fig2_vector_manipulation": "2-D vectors by hand: no runs, seconds on any device",
    "fig3_emnist_client_drift": "runs stop at the target: the plan's minutes are for the round cap",
    "fig4_cifar10_client_drift": "runs stop at the target: the plan's minutes are for the round cap",
}


def runs(notebook: str, scale: str, seed: int = 0, device: str = "cpu") -> dict[str, Config]:
    """Every config notebook ``notebook`` (its file name without .ipynb) runs at ``scale`` with its default parameters
    and ``seed``, by label."""
    def seeded(configs: dict[str, Config], n: int) -> dict[str, Config]:
        return at_seeds(configs, range(seed, seed + n))

    def cfg(figure, method, **changes):
        return config(figure, scale, method, seed=seed, device=device, **changes)

    if notebook == "fig1_fig2_vector_manipulation":
        return {}
    if notebook in ("fig3_emnist_client_drift", "fig4_cifar10_client_drift"):
        panels = ["fig3a", "fig3b"] if notebook.startswith("fig3") else ["fig4a", "fig4b"]
        n = SEEDS[scale]
        stop = target(panels[0], scale)
        listed = {f"{fig}/{m}": cfg(fig, m, stop_accuracy=stop) for fig in panels for m in DRIFT_METHODS}
        if panels[0] == "fig3a":  # the adaptive-λ ablation
            listed |= {f"{fig}/DRAG, λ ≡ c": cfg(fig, "DRAG", stop_accuracy=stop, algorithm_args={"adaptive": False})
                       for fig in panels}
        return seeded(listed, n)
    if notebook in ("figs5_6_byzantine_cifar10", "figs7_8_byzantine_emnist"):
        panels = ["fig5", "fig6"] if notebook.startswith("figs5") else ["fig7", "fig8"]
        n = SEEDS[scale]
        sweep = [c for c in ([] if scale == "ci" else C_SWEEP) if c != ROBUST_C]
        listed = {f"{fig}/{m}": cfg(fig, m) for fig in panels for m in BYZANTINE_METHODS}
        listed |= {f"{fig}/FedAvg, no attack": cfg(fig, "FedAvg", threat=None, threat_args={}) for fig in panels}
        out = seeded(listed, n)
        return out | {f"{fig}/DRAG c={c:g}": cfg(fig, "DRAG", algorithm_args={"c": c}) for fig in panels for c in sweep}
    raise ValueError(f"unknown DRAG notebook {notebook!r}; the notebooks are notebooks/drag/*.ipynb")

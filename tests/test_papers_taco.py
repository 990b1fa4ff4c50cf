"""The TACO paper settings: Table IV at each scale, Table V targets and cells, Table VII's client count."""
import pytest

from fedkit.papers import taco


@pytest.mark.parametrize("dataset", ["mnist", "fmnist", "svhn", "cifar10"])
def test_small_scale_keeps_the_papers_step_length_per_round(dataset):
    paper, small = taco.config(dataset, "paper"), taco.config(dataset, "small")
    assert paper.partition == small.partition == "label_groups"
    assert (paper.num_clients, paper.batch_size, paper.server_lr) == (small.num_clients, small.batch_size, 1.0)
    assert small.local_steps * small.lr == pytest.approx(1.0)
    assert taco.config("fmnist", "paper").local_steps * taco.config("fmnist", "paper").lr == pytest.approx(1.0)


def test_offline_substitutes_are_used_and_named():
    cfg = taco.config("cifar100", "small", "FedAvg")
    assert (cfg.dataset, cfg.model, cfg.partition_args) == ("cifar10_subset", "cnn", {"phi": 0.5})
    assert taco.label("cifar100", "small") == "cifar100 (substitute: cifar10_subset)"
    assert taco.label("fmnist", "small") == "fmnist"


def test_small_shakespeare_fits_the_offline_leaf_sample():
    cfg = taco.config("shakespeare", "small")
    assert (cfg.num_clients, cfg.model, cfg.model_args, cfg.lr) == (10, "lstm", {"hidden": 64}, 1.0)


def test_table5_targets():
    assert taco.target("fmnist", "paper", 0.2) == 0.70
    assert taco.target("fmnist", "small", 0.7136) == 0.67  # ⌊95 × 0.7136⌋ / 100
    assert taco.target("adult", "ci", 0.40) == 0.38


def test_table7_runs_one_hundred_clients():
    assert taco.scalability_config("femnist", "paper", "STEM").num_clients == 100
    small = taco.scalability_config("femnist", "small", "STEM")
    assert (small.num_clients, small.algorithm, small.partition_args) == (100, "stem", {"phi": 0.2})


def _history(accuracies, seconds, diverged=False):
    """A History with the given per-round test accuracy (round 0 first) and slowest-client seconds."""
    import pandas as pd

    from fedkit.history import History

    rounds = pd.DataFrame({"round": range(len(accuracies)), "test_accuracy": accuracies,
                           "client_seconds_max": [float("nan")] + list(seconds)})
    return History({}, rounds, pd.DataFrame({"client": [0], "expelled": [0]}), diverged)


def test_table5_rows_by_hand():
    """Table V's wiring of the target table: target, rounds and client time to it, Fig. 4's marks and Table V's
    cells, computed by hand."""
    from fedkit import report

    runs = {("fmnist", m): _history([0.1, 0.5, 0.8], [1.0, 1.0]) for m in taco.METHODS}
    runs["fmnist", "FedProx"] = _history([0.1, 0.3, 0.4], [1.0, 1.0])  # never reaches the target
    runs["fmnist", "STEM"] = _history([0.1, 0.78, 0.9], [2.0, 2.0])  # reaches it in round 1, at 2 s
    runs["fmnist", "FedACG"] = _history([0.1, 0.7, 0.9], [4.0, 4.0])  # round 2, at 8 s: 4× FedAvg's time → "o"
    runs["fmnist", "Scaffold"] = _history([0.1, float("nan")], [1.0], diverged=True)
    table = report.target_table(runs, "FedAvg", lambda d, fedavg: taco.target(d, "small", fedavg.final_accuracy),
                                taco.TABLE5, slow=taco.SLOW, label=lambda d: taco.label(d, "small"))
    table = table.set_index("method")
    assert (table["target"] == 0.76).all()  # ⌊95 × 0.8⌋ / 100
    assert table.loc["FedAvg", "rounds_to_target"] == 2 and table.loc["FedAvg", "time_to_target"] == 2.0
    assert table.loc["STEM", "rounds_to_target"] == 1 and table.loc["STEM", "vs_fedavg_time"] == 1.0
    assert table.loc["FedACG", "vs_fedavg_time"] == 4.0 and table.loc["FedACG", "time_mark"] == "o"
    assert table.loc["FedProx", "time_mark"] == "×" and table.loc["Scaffold", "time_mark"] == "×"
    assert table.loc["STEM", "round_seconds_median"] == 2.0
    assert list(table.loc[["FedAvg", "FedProx", "Scaffold"], "fedkit"]) == ["80.00 (2)", "40.00 (×)", "× (diverged)"]
    assert table.loc["TACO", "paper"] == "73.28 (59)"
    relative = report.relative(table.reset_index(), "FedAvg")
    assert relative.loc["STEM", "fmnist"] == 2.0 and relative.loc["FedACG", "fmnist"] == 4.0

"""fedkit.papers.niid_bench: NIID-Bench's settings at each scale, and the tidy per-seed table."""
import math

import pandas as pd
import pytest

from fedkit.papers import niid_bench as P


@pytest.mark.parametrize("scale", ["ci", "small", "paper"])
def test_every_cell_is_a_valid_config_with_niid_bench_optimizer(scale):
    for cell in P.cells(scale):
        cfg = P.config(*cell, scale=scale)
        assert (cfg.num_clients, cfg.batch_size, cfg.lr, cfg.optimizer) == (10, 64, 0.01, "sgd")
        assert cfg.optimizer_args == {"momentum": 0.9} and cfg.sampled_per_round() == 10
    paper = P.config("MNIST", "Dir(0.5)", "SCAFFOLD", "in_optimizer", scale="paper")
    assert (paper.dataset, paper.local_epochs, paper.rounds, paper.partition_args) == ("mnist", 10, 50, {"phi": 0.5})
    assert paper.algorithm_args["correction_at"] == "in_optimizer"


def test_small_and_paper_cover_both_data_sets_every_partition_and_both_placements():
    cells = pd.DataFrame(P.cells("small"), columns=["dataset", "partition", "method", "placement"])
    assert set(cells["dataset"]) == {"MNIST", "FMNIST"} and set(cells["partition"]) == set(P.PARTITIONS)
    assert set(cells.loc[cells["method"] == "SCAFFOLD", "placement"]) == {"after_step", "in_optimizer"}
    assert P.cells("paper") == P.cells("small")


def test_a_slice_keeps_the_order_of_the_full_listing_and_names_a_bad_value():
    full = P.cells("paper")
    part = P.cells("paper", ["MNIST"], ["#C=2", "Dir(0.5)"])
    assert part == [c for c in full if c[0] == "MNIST" and c[1] in ("#C=2", "Dir(0.5)")]
    assert len(part) == 2 * len(P.METHODS)
    assert P.cells("paper", partitions=["IID"]) == [c for c in full if c[1] == "IID"]
    both = P.cells("paper", ["MNIST"], ["Dir(0.5)"], ["SCAFFOLD", "FedAvg"])  # SCAFFOLD: both placements
    assert both == [("MNIST", "Dir(0.5)", "FedAvg", ""), ("MNIST", "Dir(0.5)", "SCAFFOLD", "after_step"),
                    ("MNIST", "Dir(0.5)", "SCAFFOLD", "in_optimizer")]
    with pytest.raises(ValueError, match="MOON"):
        P.cells("paper", methods=["MOON"])
    with pytest.raises(ValueError, match="CIFAR-10"):
        P.cells("paper", ["CIFAR-10"])
    with pytest.raises(ValueError, match="IID"):  # ci has MNIST Dir(0.5) and #C=2 only
        P.cells("ci", partitions=["IID"])
    with pytest.raises(ValueError, match="empty"):
        P.cells("paper", partitions=[])


class FakeHistory:
    def __init__(self, accuracy, diverged):
        self.final_accuracy, self.diverged = accuracy, diverged
        self.rounds = pd.DataFrame({"round": [1, 2]})


def test_tidy_has_one_row_per_cell_and_seed_with_the_peers_values():
    histories = {(("MNIST", "Dir(0.5)", "SCAFFOLD", "after_step"), 0): FakeHistory(0.5, False),
                 (("MNIST", "Dir(0.5)", "SCAFFOLD", "in_optimizer"), 0): FakeHistory(math.nan, True),
                 (("FMNIST", "quantity Dir(0.5)", "FedAvg", ""), 1): FakeHistory(0.25, False)}
    table = P.tidy(histories, "small")
    assert len(table) == 3 and table["diverged"].tolist() == [False, True, False]
    assert table["final_accuracy"].tolist()[0] == 50.0 and math.isnan(table["final_accuracy"][1])
    assert table["correction_at"].tolist() == ["after_step", "in_optimizer", "n/a"]
    assert table["flower_baseline"][0] == P.FLOWER[("MNIST", "Dir(0.5)")]["SCAFFOLD"]
    assert table["fedbench"][1] == P.FEDBENCH[("MNIST", "Dir(0.5)")]["SCAFFOLD"][0]
    assert table["niid_bench_published"].isna().all()  # Table III not found: no number from memory
    assert math.isnan(table["flower_baseline"][2])  # Flower's baseline has no quantity-skew cell

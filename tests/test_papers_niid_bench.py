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


def test_labels_pick_exact_cells_across_pairs_and_placements():
    labels = ["FMNIST/IID/SCAFFOLD/after_step", "MNIST/Dir(0.5)/FedAvg", "FMNIST/IID/FedAvg"]
    picked = P.cells("paper", labels=labels)
    assert picked == [("MNIST", "Dir(0.5)", "FedAvg", ""), ("FMNIST", "IID", "FedAvg", ""),
                      ("FMNIST", "IID", "SCAFFOLD", "after_step")]  # the full listing's order
    assert sorted(map(P.cell_label, picked)) == sorted(labels)
    assert P.cells("paper", ["FMNIST"], labels=labels[::2]) == picked[1:]  # within the slice the others chose
    with pytest.raises(ValueError, match="FMNIST/IID/SCAFFOLD'"):  # a method without its placement names no cell
        P.cells("paper", labels=["FMNIST/IID/SCAFFOLD"])
    with pytest.raises(ValueError, match="MNIST/Dir"):  # not in the slice the other parameters chose
        P.cells("paper", ["FMNIST"], labels=["MNIST/Dir(0.5)/FedAvg"])


class FakeHistory:
    def __init__(self, accuracy, diverged, curve=None):
        self.final_accuracy, self.diverged = accuracy, diverged
        curve = [0.1, accuracy] if curve is None else curve
        self.rounds = pd.DataFrame({"round": range(len(curve)), "test_accuracy": curve})


def test_tidy_has_one_row_per_cell_and_seed_with_the_peers_values():
    histories = {(("MNIST", "Dir(0.5)", "SCAFFOLD", "after_step"), 0): FakeHistory(0.5, False, [0.1, 0.6, 0.5]),
                 (("MNIST", "Dir(0.5)", "SCAFFOLD", "in_optimizer"), 0): FakeHistory(math.nan, True,
                                                                                    [0.1, 0.7, math.nan]),
                 (("FMNIST", "quantity Dir(0.5)", "FedAvg", ""), 1): FakeHistory(0.25, False)}
    table = P.tidy(histories, "small")
    assert len(table) == 3 and table["diverged"].tolist() == [False, True, False]
    assert table["final_accuracy"].tolist()[0] == 50.0 and math.isnan(table["final_accuracy"][1])
    # the best across rounds: Flower's statistic; a diverged run keeps its best before it diverged
    assert table["best_accuracy"].tolist() == pytest.approx([60.0, 70.0, 25.0])
    assert table["correction_at"].tolist() == ["after_step", "in_optimizer", "n/a"]
    assert (table["flower_best_mean"][0], table["flower_best_std"][0]) == P.FLOWER[("MNIST", "Dir(0.5)")]["SCAFFOLD"]
    assert table["fedbench"][1] == P.FEDBENCH[("MNIST", "Dir(0.5)")]["SCAFFOLD"][0]
    assert table["niid_bench_published"].isna().all()  # Table III not found: no number from memory
    assert math.isnan(table["flower_best_mean"][2])  # Flower's baseline has no quantity-skew cell
    assert math.isnan(P.best_accuracy(FakeHistory(math.nan, True, [math.nan])))


def test_flower_is_the_merged_readme_mean_and_std_of_the_best_across_rounds():
    """adap/flower baselines/niid_bench/README.md at 5252f675 (PR #2428 as merged), FMNIST #C=2 as issue 42 quotes
    it, and every cell fedkit runs that Flower has."""
    assert "5252f675773508b9701498e170773243d459ac99" in P.FLOWER_SOURCE
    assert P.FLOWER[("FMNIST", "#C=2")] == {"FedAvg": (78.10, 2.51), "SCAFFOLD": (33.80, 41.22),
                                            "FedProx": (78.05, 0.99), "FedNova": (71.67, 2.34)}
    assert set(P.FLOWER) == {(d, p) for d in P.DATASETS for p in P.PARTITIONS if p != "quantity Dir(0.5)"}
    assert all(set(cell) == {"FedAvg", "SCAFFOLD", "FedProx", "FedNova"} and all(s >= 0 for _, s in cell.values())
               for cell in P.FLOWER.values())


def test_parity_claims_compare_the_best_across_rounds_within_flowers_spread(tmp_path):
    from fedkit import ledger
    from fedkit.papers import peers_claims as C

    assert C.tolerance(0.07) == 2.0 and C.tolerance(2.51) == pytest.approx(5.02)
    claims = {c.id: c for c in C.CLAIMS}
    fedavg = claims["peers-fmnist-c2-fedavg"]
    assert fedavg.rule.value == 78.10 and fedavg.rule.tolerance == pytest.approx(5.02)
    assert fedavg.measure.value == "best_accuracy" and fedavg.measure.where["scale"] == "paper"
    assert "reaches chance" in claims["peers-mnist-c1-fedavg"].caveat and not fedavg.caveat
    assert not fedavg.uncheckable and not claims["peers-mnist-c1-fedavg"].uncheckable  # a run above 42.97 % fails it
    # Flower's SCAFFOLD at chance (10.00 ± 0.00): agreeing means failing too, and the row says so; a run that learns
    # (best 13 %) is outside the 2-point band, so the claim stays checkable
    at_chance = claims["peers-fmnist-c1-scaffold"]
    assert "stay at chance" in at_chance.caveat and not at_chance.uncheckable
    learned = pd.DataFrame({"SCAFFOLD": [13.0, 13.5, 12.5]})  # three seeds that learn a little
    assert ledger.decide_values(at_chance, learned).label == "not reproduced"
    assert [c for c in claims if "stay at chance" in claims[c].caveat] == ["peers-mnist-c1-scaffold",
                                                                         "peers-fmnist-c1-scaffold"]
    # MNIST Dir(0.5) at paper scale: each seed's best round of the per-round curves, in fractions
    scaffold = claims["peers-mnist-dir(0.5)-scaffold"]
    assert (scaffold.paper_measure.source, scaffold.paper_measure.reduce) == ("scaffold_placement.csv", "best")
    assert scaffold.rule.name == "SCAFFOLD after_step" and scaffold.rule.value == pytest.approx(0.9907)
    # the small scale has no run of Flower's setting: not run, even once its CSV has the column
    small = tmp_path / "peers"
    small.mkdir()
    pd.DataFrame({"dataset": ["FMNIST"] * 3, "partition": "#C=2", "method": "FedAvg", "correction_at": "n/a",
                  "seed": [0, 1, 2], "scale": "small", "best_accuracy": 78.0}).to_csv(small / "niid_bench.csv")
    assert ledger.decide(fedavg, "small", tmp_path).label == "not run"
    (small / "paper").mkdir()
    paper = pd.DataFrame({"dataset": ["FMNIST"] * 3, "partition": "#C=2", "method": "FedAvg", "correction_at": "n/a",
                          "seed": [0, 1, 2], "scale": "paper", "best_accuracy": [74.0, 80.0, 82.5]})
    paper.to_csv(small / "paper" / "niid_bench.csv")
    assert ledger.decide(fedavg, "paper", tmp_path).label == "reproduced"  # all within 78.10 ± 5.02
    other = tmp_path / "other"  # a new path: the ledger caches a CSV by path and modification time
    (other / "peers" / "paper").mkdir(parents=True)
    paper.assign(best_accuracy=[70.0, 72.0, 84.0]).to_csv(other / "peers" / "paper" / "niid_bench.csv")
    assert ledger.decide(fedavg, "paper", other).label == "not reproduced"  # every seed outside the band
    # FMNIST #C=2 SCAFFOLD: Flower's band (33.80 ± 82.44) admits every accuracy, so no run is needed or counted
    scaffold = claims["peers-fmnist-c2-scaffold"]
    assert "admits every accuracy from 0 to 100 %" in scaffold.uncheckable and not scaffold.caveat
    paper.assign(method="SCAFFOLD", correction_at="after_step").to_csv(other / "peers" / "paper" / "niid_bench.csv")
    for scale in ("small", "paper"):
        verdict = ledger.decide(scaffold, scale, other)
        assert verdict.label == "not comparable" and verdict.reason.startswith(ledger.UNCHECKABLE + ": ")

"""The TACO paper settings: Table IV at each scale, Table V targets, Table VII's client count."""
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

"""Paper scale cannot rot: every notebook's paper-scale configs (its paper module's ``runs``) validate, find their data
or name it missing, build their model and take one local step, one per (data set, model, algorithm). Real data where
it is under $FEDKIT_DATA (the config's own partition); where it is missing, synthetic data of its shape on an IID split
(and, for a pretrained base that is missing too, the tiny random transformer in its place)."""
import importlib
from pathlib import Path

import numpy as np
import pytest
import torch

from fedkit.data import load_dataset
from fedkit.data.base import FedData
from fedkit.errors import DataNotFoundError
from fedkit.federation import Federation
from fedkit.plan import offline

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
PAPERS = ("taco", "feddual", "fadamgc", "drag")
# the shape (a tuple: images; an int: token ids of that length) and classes of each paper-scale data set that may be
# missing here (None: the length is the config's max_length)
SHAPES = {"emnist": ((1, 28, 28), 47), "svhn": ((3, 32, 32), 10), "cifar10": ((3, 32, 32), 10),
          "cifar100": ((3, 32, 32), 100), "tinyimagenet": ((3, 64, 64), 200), "qnli": (None, 2), "qqp": (None, 2),
          "sst2": (None, 2), "20newsgroups": (None, 20), "shakespeare": (80, 80)}
BACKBONE_FEATURES = (512,)  # the VGG-16 trunk's output for 32×32 images
# data sets of which the data root holds a sample too small for the paper's federation: missing at paper scale
SAMPLES = {"shakespeare": "LEAF Shakespeare: the data root's sample has 10 speaking roles, the paper's 20 clients "
                          "need 20 with >= 64 samples"}


def paper_configs() -> dict[str, object]:
    """Every notebook's paper-scale configs, the first of each (data set, model, algorithm), by a test id."""
    out = {}
    for paper in PAPERS:
        module = importlib.import_module(f"fedkit.papers.{paper}")
        for notebook in sorted((NOTEBOOKS / paper).glob("*.ipynb")):
            for cfg in module.runs(notebook.stem, "paper").values():
                out.setdefault(f"{paper}-{cfg.dataset}-{cfg.model}-{cfg.algorithm}", cfg)
    return out


CONFIGS = paper_configs()


def test_paper_config_listings_cover_every_notebook():
    for paper in PAPERS:
        module = importlib.import_module(f"fedkit.papers.{paper}")
        for notebook in sorted((NOTEBOOKS / paper).glob("*.ipynb")):
            listed = module.runs(notebook.stem, "paper")  # every Config validates as it is built
            assert listed or notebook.stem in module.NOTES, f"{notebook}: no runs and no note saying why"
    assert len(CONFIGS) > 50


def synthetic(cfg, n: int) -> FedData:
    """Random data of ``cfg``'s data set's shape and classes: images in [0, 1], backbone features, or token ids."""
    shape, classes = SHAPES[cfg.dataset]
    if "backbone" in cfg.dataset_args:
        shape = BACKBONE_FEATURES
    g = torch.Generator().manual_seed(0)
    if not isinstance(shape, tuple):  # token ids (below both vocabularies: LEAF's 80, the tiny random base's)
        x = torch.randint(5, 60, (2 * n, shape or cfg.dataset_args["max_length"]), generator=g)
    else:
        x = torch.rand((2 * n, *shape), generator=g)
    y = torch.arange(2 * n) % classes
    return FedData(cfg.dataset, x[:n], y[:n], x[n:], y[n:], classes)


@pytest.mark.parametrize("key", list(CONFIGS))
def test_paper_config_takes_a_local_step(key, monkeypatch):
    cfg = CONFIGS[key].replace(rounds=1, local_steps=1, local_epochs=None)
    missing = SAMPLES.get(cfg.dataset)
    try:
        with offline():
            load_dataset(cfg.dataset, **cfg.dataset_args)
    except DataNotFoundError as err:  # expected, and named: the data set, or its tokenizer's base
        missing = str(err)
        assert cfg.dataset in missing or str(cfg.dataset_args.get("tokenizer")) in missing, missing
    if missing:
        samples = max(8 * cfg.num_clients, cfg.build_algorithm().root_samples + 8)
        data = synthetic(cfg, samples)
        monkeypatch.setattr("fedkit.federation.load_dataset", lambda *args, **kwargs: data)
        cfg = cfg.replace(partition="iid", partition_args={})
        if cfg.model_args.get("base") == "gpt2":
            with offline(), pytest.raises(DataNotFoundError, match="gpt2"):
                Federation(cfg)
            cfg = cfg.replace(model_args={**cfg.model_args, "base": "tiny_random"})
    fed = Federation(cfg)
    rnd = fed.round(fed.initial())
    assert len(rnd.plans) > 0 and all(plan.steps == 1 for plan in rnd.plans)
    assert np.isfinite(rnd.result.train_loss.cpu().numpy()).all() and torch.isfinite(rnd.after.w).all()

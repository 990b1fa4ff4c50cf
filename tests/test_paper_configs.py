"""Paper scale cannot rot: every notebook's paper-scale configs (its paper module's ``runs``) validate, find their data
or name it missing, partition it (where it is here), build their model and take one local step.

- listings: every config of every notebook validates (at collection: a broken one is a collection error);
- data and partitions: each data set loads from the data root or is named missing; each distinct paper partition of the
  data here (but COSTLY) gives every client samples, on the full data;
- models: every model builds for every data set it runs on (input shape, classes), each once;
- steps, deduplicated: for each model its config with the fewest clients a round, then, for each (paper, algorithm,
  threat) none of those runs, its config with the cheapest model (CHEAP). So every model and every algorithm of a
  paper takes one local step with the paper's options, on the smallest slice that gives every client data (two samples
  a client, plus the server's root samples), split IID (the paper's partition is the test above), the model copied
  from the one built. Where the data is missing here the slice is synthetic data of its shape (and, for a pretrained
  base that is missing too, the tiny random transformer and its tokenizer)."""
import copy
import importlib
import inspect
import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch

from fedkit.data import load_dataset, make_partition
from fedkit.data.base import FedData
from fedkit.data.datasets import DATASETS
from fedkit.errors import DataNotFoundError
from fedkit.federation import Federation, partition_seed
from fedkit.models.registry import build_model
from fedkit.plan import offline

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
PAPERS = ("taco", "feddual", "fadamgc", "drag", "peers")
# the shape (a tuple: images; an int: token ids of that length) and classes of each paper-scale data set that may be
# missing here (None: the length is the config's max_length)
SHAPES = {"emnist": ((1, 28, 28), 47), "svhn": ((3, 32, 32), 10), "cifar10": ((3, 32, 32), 10),
          "cifar100": ((3, 32, 32), 100), "tinyimagenet": ((3, 64, 64), 200), "qnli": (None, 2), "qqp": (None, 2),
          "sst2": (None, 2), "20newsgroups": (None, 20), "shakespeare": (80, 80)}
BACKBONE_FEATURES = (512,)  # the VGG-16 trunk's output for 32×32 images
# data sets of which the data root holds a sample too small for the paper's federation: missing at paper scale
SAMPLES = {"shakespeare": "LEAF Shakespeare: the data root's sample has 10 speaking roles, the paper's 20 clients "
                          "need 20 with >= 64 samples"}
# paper partitions not checked, as each costs over a second, and why that is safe
COSTLY = {("fashion_mnist", '{"test_samples": 2000, "train_samples": 12000}', "dirichlet", '{"phi": 0.1}', 100):
          "FAdamGC's small-scale FMNIST split (1.3 s of NIID-Bench resampling; the other splits take 0.3 s together): "
          "appendix H and the mechanism notebook run it at small scale whatever the scale"}
# data sets read from the data root that have no synthetic stand-in here: their cases need the real files
REAL_ONLY = {name for name, load in DATASETS.items() if "root" in inspect.signature(load).parameters} - set(SHAPES)
CHEAP = (  # models by the cost of a step, cheapest first (a model not listed: dearest)
    "quadratic", "mlp", "fc500", "feddual_lenet", "cnn", "tf_cnn", "lstm", "lora_transformer", "resnet18")


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)


@cache
def listings() -> dict[tuple[str, str], dict]:
    """Every notebook's paper-scale configs by label, by (paper, notebook); every Config validates as it is built."""
    out = {}
    for paper in PAPERS:
        module = importlib.import_module(f"fedkit.papers.{paper}")
        for notebook in sorted((NOTEBOOKS / paper).glob("*.ipynb")):
            out[paper, notebook.stem] = module.runs(notebook.stem, "paper")
    return out


def every_config() -> list:
    return [cfg for listed in listings().values() for cfg in listed.values()]


def stepped() -> dict[str, tuple[str, object]]:
    """The (paper, config)s that take a step, by test id: for each model, its config with the fewest clients a
    round; then, for each (paper, algorithm, threat) that none of those runs, its config with the cheapest model
    (CHEAP), then the fewest clients a round."""
    def cost(cfg):
        return CHEAP.index(cfg.model) if cfg.model in CHEAP else len(CHEAP), cfg.sampled_per_round()

    models, algorithms = {}, {}
    for (paper, _), listed in listings().items():
        for cfg in listed.values():
            for chosen, key in ((models, cfg.model), (algorithms, (paper, cfg.algorithm, cfg.threat))):
                if key not in chosen or cost(cfg) < cost(chosen[key][1]):
                    chosen[key] = paper, cfg
    cases = list(models.values())
    covered = {(paper, cfg.algorithm, cfg.threat) for paper, cfg in cases}
    cases += [case for key, case in algorithms.items() if key not in covered]
    out = {}
    for paper, cfg in cases:
        name = f"{paper}-{cfg.dataset}-{cfg.model}-{cfg.algorithm}" + (f"-{cfg.threat}" if cfg.threat else "")
        out[name if name not in out else f"{name}-{len(out)}"] = paper, cfg
    return out


CONFIGS = stepped()


def test_paper_config_listings_cover_every_notebook():
    for (paper, notebook), listed in listings().items():
        module = importlib.import_module(f"fedkit.papers.{paper}")
        assert listed or notebook in module.NOTES, f"{paper}/{notebook}: no runs and no note saying why"
    assert len(every_config()) > 1000
    algorithms = {(paper, c.algorithm, c.threat) for (paper, _), listed in listings().items() for c in listed.values()}
    assert algorithms == {(paper, c.algorithm, c.threat) for paper, c in CONFIGS.values()}  # each steps once
    assert {c.model for c in every_config()} == {c.model for _, c in CONFIGS.values()}


@cache
def real_data(dataset: str, dataset_args: str) -> FedData | str:
    """``dataset`` loaded from the data root without downloading, or why it is missing here."""
    if dataset in SAMPLES:
        return SAMPLES[dataset]
    try:
        with offline():
            return load_dataset(dataset, **json.loads(dataset_args))
    except DataNotFoundError as err:  # expected, and named: the data set, or its tokenizer's base
        missing = str(err)
        assert dataset in missing or str(json.loads(dataset_args).get("tokenizer")) in missing, missing
        return missing


@pytest.mark.shared_data
def test_paper_config_data_is_found_or_named_missing_and_partitions_give_every_client_data():
    """Each paper data set loads or is named missing (real_data); each distinct paper partition (data, split, clients)
    of the data here, but the COSTLY ones, gives every client samples."""
    checked = set()
    for cfg in every_config():
        data = real_data(cfg.dataset, _json(cfg.dataset_args))
        key = (cfg.dataset, _json(cfg.dataset_args), cfg.partition, _json(cfg.partition_args), cfg.num_clients)
        if key in checked or key in COSTLY or isinstance(data, str):
            continue
        checked.add(key)
        labels = data.y_train.numpy() if data.task == "classification" else np.zeros(len(data.y_train), int)
        extra = {"users": data.users} if cfg.partition == "natural" else {}
        parts = make_partition(cfg.partition, labels, cfg.num_clients, partition_seed(cfg), **extra,
                               **cfg.partition_args)
        assert len(parts) == cfg.num_clients and min(len(p) for p in parts) > 0, key
    assert len(checked) >= 10  # the data root's MNIST, FMNIST, adult, FEMNIST, ... with several splits each


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


def here(cfg, n: int):
    """``cfg`` and its data as they run here: the first ``n`` samples of its data set, or synthetic data of its shape
    where it is missing, and a missing pretrained base (named as missing) replaced by the tiny random transformer."""
    data = real_data(cfg.dataset, _json(cfg.dataset_args))
    if not isinstance(data, str):
        return cfg, FedData(data.name, data.x_train[:n], data.y_train[:n], data.x_test[:n], data.y_test[:n],
                            data.num_classes, task=data.task)
    if cfg.dataset in REAL_ONLY:
        pytest.skip(f"{cfg.dataset} is not in the data root here ({data})")
    data = synthetic(cfg, n)
    if cfg.model_args.get("base") == "gpt2":
        with offline(), pytest.raises(DataNotFoundError, match="gpt2"):
            build_model(cfg.model, data.input_shape, data.num_classes, **cfg.model_args)
        cfg = cfg.replace(model_args={**cfg.model_args, "base": "tiny_random"},
                          dataset_args={**cfg.dataset_args, "tokenizer": "tiny_random"})  # a model's base tokenizes
    return cfg, data


@cache
def built(name: str, input_shape: tuple[int, ...], num_classes: int, options: str):
    return build_model(name, input_shape, num_classes, **json.loads(options))


@pytest.mark.parametrize("real", [False, pytest.param(True, marks=pytest.mark.shared_data)],
                         ids=["stand-in data", "real data"])
def test_paper_config_models_build(real):
    """Every paper model on every data set it runs on (its input shape and classes) builds, each once: on the data
    sets that a stand-in covers anywhere, on the others where the data root holds them."""
    shapes = set()
    for cfg in every_config():
        key = (cfg.model, _json(cfg.model_args), cfg.dataset, _json(cfg.dataset_args))
        if (cfg.dataset in REAL_ONLY) != real:
            continue
        if key not in shapes:
            shapes.add(key)
            cfg, data = here(cfg, 2)
            model = built(cfg.model, data.input_shape, data.num_classes, _json(cfg.model_args))
            assert sum(p.numel() for p in model.parameters() if p.requires_grad) > 0, key
    assert len(shapes) >= 5


@pytest.mark.parametrize("key", [pytest.param(key, marks=[pytest.mark.shared_data] * (cfg.dataset in REAL_ONLY))
                                 for key, (_, cfg) in CONFIGS.items()])
def test_paper_config_takes_a_local_step(key, monkeypatch):
    """One local step of each stepped config on the smallest slice that gives every client data, split IID (the
    paper's partitions are checked above, on the full data)."""
    cfg = CONFIGS[key][1].replace(rounds=1, local_steps=1, local_epochs=None, partition="iid", partition_args={})
    cfg, data = here(cfg, 2 * cfg.num_clients + cfg.build_algorithm().root_samples)
    monkeypatch.setattr("fedkit.federation.load_dataset", lambda *args, **kwargs: data)
    monkeypatch.setattr("fedkit.federation.build_model", lambda name, shape, classes, **options: copy.deepcopy(
        built(name, tuple(shape), classes, _json(options))))  # each model built once
    fed = Federation(cfg)
    rnd = fed.round(fed.initial())
    assert len(rnd.plans) > 0 and all(plan.steps == 1 for plan in rnd.plans)
    assert np.isfinite(rnd.result.train_loss.cpu().numpy()).all() and torch.isfinite(rnd.after.w).all()

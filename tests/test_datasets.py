"""Tests of fedkit.data.datasets: every loader on tiny files written here in the canonical formats, the error
paths (unknown names/options, missing files, failed downloads) and, marked shared_data, the real files
under $FEDKIT_DATA."""
from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from fedkit.data import DATASETS, data_root, leaf, load_dataset
from fedkit.data.adult import NUM_FEATURES
from fedkit.errors import ConfigError, DataFileError, DataNotFoundError, FedkitError

IDX_NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte"]


@pytest.fixture(autouse=True)
def _no_download_env(monkeypatch):
    monkeypatch.delenv("FEDKIT_DOWNLOAD", raising=False)


@pytest.fixture
def offline(monkeypatch):
    """Every urllib request fails the way it does without a network."""
    def refuse(*args, **kwargs):
        raise urllib.error.URLError("[Errno 101] Network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def pixels(a: torch.Tensor) -> np.ndarray:
    """Float images in [0, 1] back to their uint8 values (exact for pixel / 255)."""
    return a.mul(255).round().to(torch.uint8).numpy()


# ---- IDX sets -------------------------------------------------------------------------------------------

def write_idx(path: Path, array: np.ndarray) -> None:
    data = bytes([0, 0, 0x08, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)


def write_idx_set(directory: Path, n_train: int = 6, n_test: int = 4, gz: bool = True, seed: int = 0,
                  names: list[str] = IDX_NAMES, size: int = 28) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [rng.integers(0, 256, (n_train, size, size), dtype=np.uint8),
              rng.integers(0, 10, n_train, dtype=np.uint8),
              rng.integers(0, 256, (n_test, size, size), dtype=np.uint8),
              rng.integers(0, 10, n_test, dtype=np.uint8)]
    arrays[0][0, 0, 0], arrays[0][0, 0, 1] = 0, 255  # both ends of the pixel range
    for name, array in zip(names, arrays, strict=True):
        write_idx(directory / (name + (".gz" if gz else "")), array)
    return arrays


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("name", ["mnist", "fashion_mnist"])
def test_idx_sets_from_tiny_files(tmp_path, name, gz):
    train_x, train_y, test_x, test_y = write_idx_set(tmp_path / name, gz=gz)
    d = load_dataset(name, root=tmp_path)
    assert (d.name, d.num_classes, d.users, d.input_shape) == (name, 10, None, (1, 28, 28))
    assert d.x_train.shape == (6, 1, 28, 28) and d.x_test.shape == (4, 1, 28, 28)
    assert d.x_train.dtype == d.x_test.dtype == torch.float32
    assert d.y_train.dtype == d.y_test.dtype == torch.int64
    assert d.x_train.min() == 0 and d.x_train.max() == 1
    np.testing.assert_array_equal(pixels(d.x_train[:, 0]), train_x)
    np.testing.assert_array_equal(pixels(d.x_test[:, 0]), test_x)
    np.testing.assert_array_equal(d.y_train.numpy(), train_y)
    np.testing.assert_array_equal(d.y_test.numpy(), test_y)


def test_idx_missing_files_offline(tmp_path):
    write_idx_set(tmp_path / "mnist", names=IDX_NAMES[:2] + ["unused-a", "unused-b"])
    with pytest.raises(DataNotFoundError) as e:
        load_dataset("mnist", root=tmp_path)
    msg = str(e.value)
    assert str(tmp_path / "mnist") in msg and "FEDKIT_DATA" in msg and "FEDKIT_DOWNLOAD=1" in msg
    assert "missing t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte)" in msg
    assert "train-images-idx3-ubyte[.gz]" in msg


def test_idx_download_without_network(tmp_path, offline):
    with pytest.raises(DataNotFoundError) as e:
        load_dataset("fashion_mnist", root=tmp_path, download=True)
    assert isinstance(e.value.__cause__, urllib.error.URLError)
    assert "Network is unreachable" in str(e.value) and str(tmp_path / "fashion_mnist") in str(e.value)


def test_idx_download_uses_torchvision_mirrors_and_md5(tmp_path, monkeypatch):
    from torchvision.datasets import MNIST, utils

    served = tmp_path / "served"
    train_x, *_ = write_idx_set(served)
    calls = []

    def fake_download(url, root, filename=None, md5=None):
        calls.append((url, filename, md5))
        if url.startswith(MNIST.mirrors[0]):
            raise urllib.error.URLError("first mirror down")
        Path(root).mkdir(parents=True, exist_ok=True)
        (Path(root) / filename).write_bytes((served / filename).read_bytes())

    monkeypatch.setattr(utils, "download_url", fake_download)
    monkeypatch.setenv("FEDKIT_DOWNLOAD", "1")
    d = load_dataset("mnist", root=tmp_path / "root")
    np.testing.assert_array_equal(pixels(d.x_train[:, 0]), train_x)
    assert {(f, m) for _, f, m in calls} == set(MNIST.resources)
    assert [url for url, _, _ in calls[:2]] == [m + "train-images-idx3-ubyte.gz" for m in MNIST.mirrors[:2]]


def test_download_env_zero_means_offline(tmp_path, monkeypatch):
    from torchvision.datasets import utils

    monkeypatch.setattr(utils, "download_url", lambda *a, **k: pytest.fail("download attempted"))
    monkeypatch.setenv("FEDKIT_DOWNLOAD", "0")
    with pytest.raises(DataNotFoundError):
        load_dataset("mnist", root=tmp_path)
    monkeypatch.setenv("FEDKIT_DOWNLOAD", "maybe")
    with pytest.raises(ConfigError, match="FEDKIT_DOWNLOAD"):
        load_dataset("mnist", root=tmp_path)


def test_cache_returns_fresh_objects_and_sees_changed_files(tmp_path):
    write_idx_set(tmp_path / "mnist")
    first, second = load_dataset("mnist", root=tmp_path), load_dataset("mnist", root=tmp_path)
    assert first is not second and torch.equal(first.x_train, second.x_train)
    write_idx_set(tmp_path / "mnist", n_train=3, seed=1)
    assert len(load_dataset("mnist", root=tmp_path).y_train) == 3


# ---- torchvision sets -----------------------------------------------------------------------------------

@pytest.fixture
def no_md5(monkeypatch):
    """Let torchvision accept tiny files in place of its md5-pinned originals."""
    import torchvision.datasets.cifar
    import torchvision.datasets.svhn

    def exists(fpath, md5=None):
        return os.path.isfile(fpath)

    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", exists)
    monkeypatch.setattr(torchvision.datasets.svhn, "check_integrity", exists)


def write_pickle(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj))


def test_cifar10_from_tiny_pickled_batches(tmp_path, no_md5):
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar10" / "cifar-10-batches-py"
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batches[name] = (rng.integers(0, 256, (2, 3072), dtype=np.uint8), rng.integers(0, 10, 2).tolist())
        write_pickle(folder / name, {"data": batches[name][0], "labels": batches[name][1]})
    write_pickle(folder / "batches.meta", {"label_names": [f"c{i}" for i in range(10)]})
    d = load_dataset("cifar10", root=tmp_path)
    train = np.concatenate([batches[f"data_batch_{i}"][0] for i in range(1, 6)]).reshape(-1, 3, 32, 32)
    assert d.x_train.shape == (10, 3, 32, 32) and d.x_test.shape == (2, 3, 32, 32) and d.num_classes == 10
    assert d.x_train.dtype == torch.float32 and d.y_train.dtype == torch.int64
    np.testing.assert_array_equal(pixels(d.x_train), train)  # the pickles' rows are R, G, B planes
    np.testing.assert_array_equal(pixels(d.x_test), batches["test_batch"][0].reshape(-1, 3, 32, 32))
    assert d.y_train.tolist() == sum((batches[f"data_batch_{i}"][1] for i in range(1, 6)), [])


def test_cifar100_from_tiny_pickles(tmp_path, no_md5):
    rng = np.random.default_rng(1)
    folder = tmp_path / "cifar100" / "cifar-100-python"
    labels = {"train": [99, 0, 42], "test": [7, 98]}
    data = {split: rng.integers(0, 256, (len(y), 3072), dtype=np.uint8) for split, y in labels.items()}
    for split in ("train", "test"):
        write_pickle(folder / split, {"data": data[split], "fine_labels": labels[split]})
    write_pickle(folder / "meta", {"fine_label_names": [f"c{i}" for i in range(100)]})
    d = load_dataset("cifar100", root=tmp_path)
    assert d.num_classes == 100 and d.y_train.tolist() == [99, 0, 42] and d.y_test.tolist() == [7, 98]
    np.testing.assert_array_equal(pixels(d.x_test), data["test"].reshape(-1, 3, 32, 32))


def test_svhn_from_tiny_mat_files(tmp_path, no_md5):
    from scipy.io import savemat

    rng = np.random.default_rng(2)
    images = {"train": rng.integers(0, 256, (32, 32, 3, 3), dtype=np.uint8),
              "test": rng.integers(0, 256, (32, 32, 3, 2), dtype=np.uint8)}
    labels = {"train": [10, 1, 9], "test": [3, 10]}  # SVHN's .mat files label the digit 0 as 10
    (tmp_path / "svhn").mkdir()
    for split in ("train", "test"):
        savemat(tmp_path / "svhn" / f"{split}_32x32.mat",
                {"X": images[split], "y": np.array(labels[split], dtype=np.uint8)[:, None]})
    d = load_dataset("svhn", root=tmp_path)
    assert d.y_train.tolist() == [0, 1, 9] and d.y_test.tolist() == [3, 0] and d.num_classes == 10
    assert d.x_train.shape == (3, 3, 32, 32)
    np.testing.assert_array_equal(pixels(d.x_train), images["train"].transpose(3, 2, 0, 1))


def test_emnist_from_tiny_idx_files_is_upright(tmp_path):
    raw = tmp_path / "emnist" / "EMNIST" / "raw"
    names = [f"emnist-balanced-{split}-{kind}-ubyte" for split in ("train", "test")
             for kind in ("images-idx3", "labels-idx1")]
    train_x, train_y, test_x, _ = write_idx_set(raw, gz=False, names=names)
    train_y[0] = 46
    write_idx(raw / names[1], train_y)
    d = load_dataset("emnist", root=tmp_path)
    assert d.num_classes == 47 and d.x_train.shape == (6, 1, 28, 28)
    assert d.y_train.tolist() == train_y.tolist()
    np.testing.assert_array_equal(pixels(d.x_train[:, 0]), train_x.transpose(0, 2, 1))
    np.testing.assert_array_equal(pixels(d.x_test[:, 0]), test_x.transpose(0, 2, 1))


@pytest.mark.parametrize("name,expected_file", [("emnist", "emnist-balanced-train-images-idx3-ubyte"),
                                                ("svhn", "train_32x32.mat"),
                                                ("cifar10", "cifar-10-batches-py/data_batch_1"),
                                                ("cifar100", "cifar-100-python/train")])
def test_torchvision_sets_missing_offline(tmp_path, name, expected_file):
    with pytest.raises(DataNotFoundError) as e:
        load_dataset(name, root=tmp_path)
    msg = str(e.value)
    assert str(tmp_path / name) in msg and expected_file in msg and "FEDKIT_DOWNLOAD=1" in msg


def test_torchvision_download_without_network(tmp_path, offline):
    with pytest.raises(DataNotFoundError) as e:
        load_dataset("cifar10", root=tmp_path, download=True)
    assert isinstance(e.value.__cause__, urllib.error.URLError)
    assert "could not be downloaded" in str(e.value) and str(tmp_path / "cifar10") in str(e.value)


def test_torchvision_checksum_failure(tmp_path):
    folder = tmp_path / "cifar10" / "cifar-10-batches-py"
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]:
        write_pickle(folder / name, {})
    with pytest.raises(DataNotFoundError, match="did not pass torchvision's checks"):
        load_dataset("cifar10", root=tmp_path)


# ---- CIFAR-10 subset, Adult, LEAF -------------------------------------------------------------------------

def test_cifar10_subset_from_tiny_npz(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {"x_train": rng.integers(0, 256, (5, 32, 32, 3), dtype=np.uint8),
              "y_train": np.array([6, 9, 9, 4, 1], dtype=np.uint8),
              "x_test": rng.integers(0, 256, (2, 32, 32, 3), dtype=np.uint8),
              "y_test": np.array([3, 8], dtype=np.uint8), "train_labels_all": np.zeros(50, np.uint8)}
    (tmp_path / "cifar10_convnetjs").mkdir()
    np.savez(tmp_path / "cifar10_convnetjs" / "cifar10_convnetjs_subset.npz", **arrays)
    d = load_dataset("cifar10_subset", root=tmp_path)
    assert d.x_train.shape == (5, 3, 32, 32) and d.x_test.shape == (2, 3, 32, 32) and d.num_classes == 10
    np.testing.assert_array_equal(pixels(d.x_train), arrays["x_train"].transpose(0, 3, 1, 2))
    assert d.y_train.tolist() == [6, 9, 9, 4, 1] and d.y_test.dtype == torch.int64


# Rows of adult.data with their encoding in LIBSVM's a9a file (1-based feature ids of the ones).
ADULT_ROWS = [  # rows 1, 5, 9, 28 and 13867 of adult.data
    ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, "
     "2174, 0, 40, United-States, <=50K", [3, 11, 14, 19, 39, 42, 55, 64, 67, 73, 75, 76, 80, 83], 0),
    ("28, Private, 338409, Bachelors, 13, Married-civ-spouse, Prof-specialty, Wife, Black, Female, "
     "0, 0, 40, Cuba, <=50K", [2, 6, 18, 19, 39, 40, 52, 61, 71, 72, 74, 76, 80, 95], 0),
    ("31, Private, 45781, Masters, 14, Never-married, Prof-specialty, Not-in-family, White, Female, "
     "14084, 0, 50, United-States, >50K", [2, 6, 14, 29, 39, 42, 52, 64, 67, 72, 75, 76, 82, 83], 1),
    ("54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, "
     "0, 0, 60, South, >50K", [5, 16, 20, 37, 40, 63, 68, 73, 74, 76, 82, 93], 1),
    ("63, Self-emp-not-inc, 106648, HS-grad, 9, Married-civ-spouse, Other-service, Husband, White, Male, "
     "0, 0, 12, United-States, <=50K", [5, 7, 15, 22, 36, 40, 49, 63, 67, 73, 74, 76, 78, 83], 0),
]


def a9a_rows(ids: list[list[int]]) -> np.ndarray:
    x = np.zeros((len(ids), 123), dtype=np.float32)
    for i, row in enumerate(ids):
        x[i, np.array(row) - 1] = 1
    return x


def write_adult(directory: Path, train_lines: list[str], test_lines: list[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "adult.data").write_text("\n".join(train_lines) + "\n\n")
    (directory / "adult.test").write_text("|1x3 Cross validator\n" + "\n".join(test_lines) + "\n\n")


def test_adult_matches_a9a_encoding(tmp_path):
    # the test file repeats two training rows with adult.test's label style ("<=50K." / ">50K.")
    test_lines = [ADULT_ROWS[0][0].replace("<=50K", ">50K."), ADULT_ROWS[3][0].replace(">50K", "<=50K.")]
    write_adult(tmp_path / "adult", [line for line, _, _ in ADULT_ROWS], test_lines)
    d = load_dataset("adult", root=tmp_path)
    assert NUM_FEATURES == 123 and d.input_shape == (123,) and d.num_classes == 2
    assert d.x_train.dtype == torch.float32 and d.y_train.dtype == torch.int64
    np.testing.assert_array_equal(d.x_train.numpy(), a9a_rows([ids for _, ids, _ in ADULT_ROWS]))
    assert d.y_train.tolist() == [label for _, _, label in ADULT_ROWS]
    np.testing.assert_array_equal(d.x_test.numpy(), a9a_rows([ADULT_ROWS[0][1], ADULT_ROWS[3][1]]))
    assert d.y_test.tolist() == [1, 0]


@pytest.mark.parametrize("line,message", [("39, State-gov, 77516", "expected 15"),
                                          (ADULT_ROWS[0][0].replace("White", "Green"), "unknown value"),
                                          (ADULT_ROWS[0][0].replace("<=50K", "rich"), "label")])
def test_adult_rejects_malformed_rows(tmp_path, line, message):
    write_adult(tmp_path / "adult", [ADULT_ROWS[1][0], line], [ADULT_ROWS[1][0] + "."])
    with pytest.raises(FedkitError, match=message) as e:
        load_dataset("adult", root=tmp_path)
    assert str(tmp_path / "adult" / "adult.data") in str(e.value)


def test_adult_missing_offline(tmp_path):
    with pytest.raises(DataNotFoundError) as e:
        load_dataset("adult", root=tmp_path)
    assert str(tmp_path / "adult") in str(e.value) and "adult.data, adult.test" in str(e.value)
    assert "not downloaded automatically" in str(e.value)


def write_shard(path: Path, users: dict[str, tuple[list, list]], num_samples: list | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    shard = {"users": list(users), "num_samples": num_samples or [len(y) for _, y in users.values()],
             "user_data": {u: {"x": x, "y": y} for u, (x, y) in users.items()}}
    path.write_text(json.dumps(shard))


def test_femnist_from_tiny_leaf_shards(tmp_path):
    rng = np.random.default_rng(4)

    def samples(n):
        return np.round(rng.uniform(0, 1, (n, 784)), 3).tolist(), rng.integers(0, 62, n).tolist()

    train = [{"f0001_01": samples(3), "f0002_02": samples(2)}, {"f0003_03": samples(4)}]
    test = [{"f0001_01": samples(1), "f0002_02": samples(1)}, {"f0003_03": samples(2)}]
    root = tmp_path / "femnist_leaf"
    for i in range(2):  # shard names sort as LEAF's do
        write_shard(root / "train" / f"all_data_{i}_niid_05_keep_0_train_9.json", train[i])
        write_shard(root / "test" / f"all_data_{i}_niid_05_keep_0_test_9.json", test[i])
    d = load_dataset("femnist", root=tmp_path)
    xs = [x for shard in train for user_xs, _ in shard.values() for x in user_xs]
    ys = [y for shard in train for _, user_ys in shard.values() for y in user_ys]
    assert d.x_train.shape == (9, 1, 28, 28) and d.x_test.shape == (4, 1, 28, 28) and d.num_classes == 62
    np.testing.assert_array_equal(d.x_train.reshape(9, 784).numpy(), np.array(xs, dtype=np.float32))
    assert d.y_train.tolist() == ys and d.y_train.dtype == torch.int64
    assert d.users.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 2] and d.users.dtype == np.int64
    assert d.y_test.tolist() == [y for shard in test for _, user_ys in shard.values() for y in user_ys]


def test_leaf_missing_test_shards(tmp_path):
    write_shard(tmp_path / "femnist_leaf" / "train" / "a.json", {"u": ([[0.0] * 784], [1])})
    with pytest.raises(DataNotFoundError) as e:
        load_dataset("femnist", root=tmp_path)
    assert str(tmp_path / "femnist_leaf") in str(e.value) and "missing test/*.json" in str(e.value)


def test_leaf_vocabulary():
    assert leaf.ALL_LETTERS == ("\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]"
                                "abcdefghijklmnopqrstuvwxyz}")
    assert len(leaf.ALL_LETTERS) == len(set(leaf.ALL_LETTERS)) == 80
    assert leaf.encode("\na}").tolist() == [0, 53, 79]
    assert leaf.encode("~é€").tolist() == [leaf.UNKNOWN_INDEX] * 3 == [79] * 3


def test_shakespeare_from_tiny_leaf_shards(tmp_path):
    text = "To be, or not to be~ that is the question:\nWhether 'tis nobler in the mind to suffer the slings"
    lines = {"HAMLET_HAMLET": [text[i:i + 80] for i in range(3)], "HAMLET_OPHELIA": [text[3:83]]}
    train = {u: (xs, [text[i + 80] for i in range(len(xs))]) for u, xs in lines.items()}
    train["HAMLET_OPHELIA"] = (lines["HAMLET_OPHELIA"], [text[83]])
    root = tmp_path / "leaf_shakespeare"
    write_shard(root / "train" / "all_data_niid_0_train_9.json", train)
    # LEAF leaves num_samples stale after its split: the counts must come from the lists
    write_shard(root / "test" / "all_data_niid_0_test_9.json", {"HAMLET_HAMLET": ([text[5:85]], [text[85]])},
                num_samples=[7])
    d = load_dataset("shakespeare", root=tmp_path)
    assert d.x_train.shape == (4, 80) and d.x_test.shape == (1, 80) and d.num_classes == 80
    assert d.x_train.dtype == d.y_train.dtype == torch.int64
    index = {c: i for i, c in enumerate(leaf.ALL_LETTERS)}
    expected = [[index.get(c, 79) for c in x] for xs, _ in train.values() for x in xs]
    assert d.x_train.tolist() == expected and 79 in d.x_train[0].tolist()  # "~" -> fallback 79
    assert d.y_train.tolist() == [index[c] for _, ys in train.values() for c in ys]
    assert d.users.tolist() == [0, 0, 0, 1]


# ---- tinyimagenet ---------------------------------------------------------------------------------------

def tiny_imagenet(path: Path) -> dict[str, np.ndarray]:
    """A tiny-imagenet-200.zip at ``path`` of 2 wnids × 2 train images and 2 val images (val_1 grayscale), the
    canonical layout; returns the pixels [3, 64, 64] written, by member name."""
    from PIL import Image

    rng = np.random.default_rng(0)
    wnids, images = ["n02", "n01"], {}  # wnids.txt's order, not sorted
    for wnid in wnids:
        for k in (1, 0):
            images[f"train/{wnid}/images/{wnid}_{k}.JPEG"] = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    images["val/images/val_0.JPEG"] = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    images["val/images/val_1.JPEG"] = rng.integers(0, 256, (64, 64), dtype=np.uint8)
    written = {}
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("tiny-imagenet-200/wnids.txt", "\n".join(wnids) + "\n")
        z.writestr("tiny-imagenet-200/val/val_annotations.txt", "val_0.JPEG\tn01\t0\t0\t9\t9\n"
                   "val_1.JPEG\tn02\t1\t1\t8\t8\n")
        z.writestr("tiny-imagenet-200/train/n01/n01_boxes.txt", "n01_0.JPEG\t0\t0\t9\t9\n")
        for name, array in images.items():
            buffer = io.BytesIO()
            Image.fromarray(array).save(buffer, format="PNG")  # lossless; PIL reads by content, not extension
            z.writestr(f"tiny-imagenet-200/{name}", buffer.getvalue())
            written[name] = np.repeat(array[None], 3, 0) if array.ndim == 2 else array.transpose(2, 0, 1)
    return written


@pytest.mark.parametrize("extracted", [False, True])
def test_tinyimagenet_from_the_zip_or_its_folder(tmp_path, extracted):
    path = tmp_path / "tinyimagenet" / "tiny-imagenet-200.zip"
    written = tiny_imagenet(path)
    if extracted:
        with zipfile.ZipFile(path) as z:
            z.extractall(path.parent)
        path.unlink()
    d = load_dataset("tinyimagenet", root=tmp_path)
    assert (d.name, d.num_classes, d.input_shape) == ("tinyimagenet", 200, (3, 64, 64))
    assert d.x_train.shape == (4, 3, 64, 64) and d.x_test.shape == (2, 3, 64, 64)
    assert d.x_train.dtype == torch.float32 and d.y_train.dtype == torch.int64
    assert 0 <= d.x_train.min() and d.x_train.max() <= 1
    assert d.y_train.tolist() == [0, 0, 1, 1] and d.y_test.tolist() == [1, 0]  # by wnids.txt: n02 = 0, n01 = 1
    order = ["train/n02/images/n02_0.JPEG", "train/n02/images/n02_1.JPEG", "train/n01/images/n01_0.JPEG"]
    for i, name in enumerate(order):
        assert (pixels(d.x_train[i]) == written[name]).all()
    gray = pixels(d.x_test[1])
    assert (gray == written["val/images/val_1.JPEG"]).all() and (gray[0] == gray[2]).all()  # grayscale -> RGB


def test_tinyimagenet_missing_and_broken(tmp_path, offline):
    with pytest.raises(DataNotFoundError) as e:
        load_dataset("tinyimagenet", root=tmp_path)
    msg = str(e.value)
    assert str(tmp_path / "tinyimagenet") in msg and "tiny-imagenet-200.zip" in msg and "FEDKIT_DOWNLOAD=1" in msg
    with pytest.raises(DataNotFoundError, match=r"downloading into .* failed \(tried http://cs231n"):
        load_dataset("tinyimagenet", root=tmp_path, download=True)
    (tmp_path / "tinyimagenet").mkdir()
    (tmp_path / "tinyimagenet" / "tiny-imagenet-200.zip").write_bytes(b"not a zip")
    with pytest.raises(DataFileError, match="tinyimagenet: .*not a readable tiny-imagenet-200.zip.*Fix"):
        load_dataset("tinyimagenet", root=tmp_path)


# ---- registry, options, data root -------------------------------------------------------------------------

def test_registry_names():
    assert {"mnist", "fashion_mnist", "emnist", "svhn", "cifar10", "cifar100", "cifar10_subset", "adult",
            "femnist", "shakespeare", "digits", "mnist_5k", "synthetic", "tinyimagenet", "sst2", "qnli",
            "qqp"} <= set(DATASETS)


def test_unknown_name():
    with pytest.raises(ConfigError) as e:
        load_dataset("mnistt")
    assert "'mnistt'" in str(e.value) and "fashion_mnist" in str(e.value)


@pytest.mark.parametrize("name", ["digits", "mnist", "synthetic"])
def test_unknown_option(tmp_path, name):
    with pytest.raises(ConfigError, match="colour"):
        load_dataset(name, root=tmp_path, colour="red")


def test_data_root_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_DATA", str(tmp_path / "data"))
    assert data_root() == tmp_path / "data"
    write_idx_set(tmp_path / "data" / "mnist")
    assert len(load_dataset("mnist").y_train) == 6
    monkeypatch.delenv("FEDKIT_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data_root() == tmp_path / "xdg" / "fedkit" / "data"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_root() == tmp_path / "home" / ".cache" / "fedkit" / "data"


# ---- data shipped with packages, synthetic ----------------------------------------------------------------

def test_digits():
    from sklearn.datasets import load_digits

    d, again = load_dataset("digits"), load_dataset("digits")
    assert d.x_train.shape == (1437, 1, 8, 8) and d.x_test.shape == (360, 1, 8, 8) and d.num_classes == 10
    assert d.x_train.dtype == torch.float32 and d.x_train.min() == 0 and d.x_train.max() == 1
    assert torch.equal(d.x_train, again.x_train) and torch.equal(d.y_test, again.y_test)
    order = np.random.default_rng(0).permutation(1797)
    bunch = load_digits()
    np.testing.assert_allclose(d.x_test[0, 0].numpy(), bunch.images[order[1437]] / 16, rtol=1e-6)
    assert d.y_train[:5].tolist() == bunch.target[order[:5]].tolist()


def test_mnist_5k():
    d, again = load_dataset("mnist_5k"), load_dataset("mnist_5k")
    assert d.x_train.shape == (4000, 1, 28, 28) and d.x_test.shape == (1000, 1, 28, 28)
    assert d.num_classes == 10
    assert d.x_train.dtype == torch.float32 and 0 <= d.x_train.min() and d.x_train.max() == 1
    assert set(d.y_train.tolist()) == set(d.y_test.tolist()) == set(range(10))
    assert torch.equal(d.x_test, again.x_test) and torch.equal(d.y_train, again.y_train)


def test_synthetic_shapes_and_determinism():
    d = load_dataset("synthetic", samples_per_user=50)
    assert d.x_train.shape == (30 * 40, 60) and d.x_test.shape == (30 * 10, 60) and d.num_classes == 10
    assert d.x_train.dtype == torch.float32 and d.y_train.dtype == torch.int64
    assert np.bincount(d.users).tolist() == [40] * 30 and d.users.dtype == np.int64
    assert 0 <= d.y_train.min() and d.y_train.max() <= 9
    again = load_dataset("synthetic", samples_per_user=50)
    assert torch.equal(d.x_train, again.x_train) and torch.equal(d.y_test, again.y_test)
    other_seed = load_dataset("synthetic", samples_per_user=50, seed=1)
    assert not torch.equal(d.x_train, other_seed.x_train)


def test_synthetic_paper_sizes():
    d = load_dataset("synthetic", num_users=5, dim=8, num_classes=3)
    assert d.x_train.shape[1] == 8 and d.y_train.max() <= 2
    train_sizes = np.bincount(d.users)
    assert len(train_sizes) == 5 and train_sizes.min() >= 40 and len(set(train_sizes)) > 1  # lognormal + 50
    total = len(d.y_train) + len(d.y_test)
    assert 0.2 * total <= len(d.y_test) < 0.2 * total + 5  # 80/20 within each device


def test_synthetic_alpha_and_beta():
    base = load_dataset("synthetic", samples_per_user=100)
    other_alpha = load_dataset("synthetic", samples_per_user=100, alpha=3.0)
    # α shifts every logit of a sample by the same u_k: the samples and labels stay exactly the same
    assert torch.equal(base.x_train, other_alpha.x_train) and torch.equal(base.y_train, other_alpha.y_train)
    assert not torch.equal(base.x_train, load_dataset("synthetic", samples_per_user=100, beta=0.5).x_train)
    spread = {}
    for beta in (0.0, 5.0):
        d = load_dataset("synthetic", samples_per_user=100, beta=beta)
        means = [d.x_train[torch.as_tensor(d.users == k), 0].mean().item() for k in range(30)]
        spread[beta] = np.std(means)
    assert spread[5.0] > 2 * spread[0.0]  # β spreads the devices' input means


@pytest.mark.parametrize("option,value", [("num_users", 0), ("alpha", -1.0), ("samples_per_user", 1),
                                          ("num_classes", True), ("dim", 2.5)])
def test_synthetic_rejects_bad_options(option, value):
    with pytest.raises(ConfigError, match=option):
        load_dataset("synthetic", **{option: value})


# ---- real files ($FEDKIT_DATA = a copy of shared/data) ----------------------------------------------------

def shared_root(folder: str) -> Path:
    if not os.environ.get("FEDKIT_DATA"):
        pytest.skip("FEDKIT_DATA is not set; point it at a copy of shared/data to run the real-data tests")
    root = Path(os.environ["FEDKIT_DATA"])
    if not (root / folder).is_dir():
        pytest.skip(f"{root / folder} does not exist")
    return root


@pytest.mark.shared_data
def test_real_mnist():
    d = load_dataset("mnist", root=shared_root("mnist"))
    assert d.x_train.shape == (60000, 1, 28, 28) and d.x_test.shape == (10000, 1, 28, 28)
    assert np.bincount(d.y_train).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(d.y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert d.x_train.min() == 0 and d.x_train.max() == 1


@pytest.mark.shared_data
def test_real_fashion_mnist():
    d = load_dataset("fashion_mnist", root=shared_root("fashion_mnist"))
    assert d.x_train.shape == (60000, 1, 28, 28) and d.x_test.shape == (10000, 1, 28, 28)
    assert np.bincount(d.y_train).tolist() == [6000] * 10 and np.bincount(d.y_test).tolist() == [1000] * 10


@pytest.mark.shared_data
def test_real_adult():
    d = load_dataset("adult", root=shared_root("adult"))
    assert d.x_train.shape == (32561, 123) and d.x_test.shape == (16281, 123)
    assert d.y_train.sum() == 7841 and d.y_test.sum() == 3846
    ones = d.x_train.sum(1)
    assert ones.max() == 14 and ones.min() >= 11  # one per column, none for a "?"
    rows = a9a_rows([ids for _, ids, _ in ADULT_ROWS])
    np.testing.assert_array_equal(d.x_train[[0, 4, 8, 27, 13866]].numpy(), rows)
    assert d.x_test[:, 122].sum() == 0  # as in a9a.t: nobody from Holand-Netherlands in the test split


@pytest.mark.shared_data
def test_real_femnist():
    d = load_dataset("femnist", root=shared_root("femnist_leaf"))
    assert d.x_train.shape == (3877, 1, 28, 28) and d.x_test.shape == (443, 1, 28, 28)
    writers_per_shard = [5, 6, 5, 5, 5]
    per_writer = np.bincount(d.users)
    shard_totals = np.add.reduceat(per_writer, np.cumsum([0] + writers_per_shard[:-1]))
    assert len(per_writer) == 26 and shard_totals.tolist() == [779, 772, 777, 780, 769]
    assert d.y_train.min() == 0 and d.y_train.max() == 61
    assert d.x_train.min() == 0 and d.x_train.max() == 1 and d.x_train.mean() > 0.5  # white background = 1


@pytest.mark.shared_data
def test_real_shakespeare():
    root = shared_root("leaf_shakespeare")
    d = load_dataset("shakespeare", root=root)
    assert d.x_train.shape == (41990, 80) and d.x_test.shape == (3881, 80)
    assert len(np.unique(d.users)) == 10 and d.x_train.max() < 80 and d.y_test.max() < 80
    shard = json.loads(next((root / "leaf_shakespeare" / "train").glob("*.json")).read_text())
    first = shard["user_data"][shard["users"][0]]
    assert "".join(leaf.ALL_LETTERS[i] for i in d.x_train[0]) == first["x"][0]
    assert leaf.ALL_LETTERS[d.y_train[0]] == first["y"][0]


@pytest.mark.shared_data
def test_real_cifar10_subset():
    d = load_dataset("cifar10_subset", root=shared_root("cifar10_convnetjs"))
    assert d.x_train.shape == (4000, 3, 32, 32) and d.x_test.shape == (1000, 3, 32, 32)
    assert pixels(d.x_train[0]).reshape(-1)[:9].tolist() == [59, 43, 50, 68, 98, 119, 139, 145, 149]
    assert pixels(d.x_test[0]).reshape(-1)[:3].tolist() == [158, 159, 165]
    assert np.bincount(d.y_train).tolist() == [396, 366, 420, 384, 422, 393, 414, 385, 407, 413]
    assert d.y_train[:10].tolist() == [6, 9, 9, 4, 1, 1, 2, 7, 8, 3] and d.y_test[0] == 3


def test_backbone_features_are_the_frozen_trunk_on_normalised_images_and_cached(tmp_path, monkeypatch):
    from fedkit.data.base import FedData
    from fedkit.data.features import backbone_features
    from fedkit.models import VGG16

    monkeypatch.setenv("FEDKIT_FEATURES", str(tmp_path))
    g = torch.Generator().manual_seed(0)
    data = FedData("tiny", torch.rand(5, 3, 32, 32, generator=g), torch.arange(5),
                   torch.rand(2, 3, 32, 32, generator=g), torch.arange(2), num_classes=5)
    out = backbone_features(data, "vgg16_random")
    torch.manual_seed(0)
    trunk = VGG16((3, 32, 32), 10).features.eval()
    for layer in trunk:  # torchvision's VGG initialisation
        if isinstance(layer, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
            torch.nn.init.zeros_(layer.bias)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    with torch.no_grad():
        torch.testing.assert_close(out.x_train, trunk((data.x_train - mean) / std).flatten(1))
    assert out.x_test.shape == (2, 512) and out.name == "tiny+vgg16_random" and torch.equal(out.y_train, data.y_train)
    assert out.x_train.std(0).mean() > 1e-2 * out.x_train.abs().mean()  # the features depend on the image
    assert len(list(tmp_path.iterdir())) == 1
    torch.testing.assert_close(backbone_features(data, "vgg16_random").x_test, out.x_test)  # from the cache
    with pytest.raises(ConfigError, match="unknown backbone"):
        backbone_features(data, "resnet")


def test_train_and_test_samples_keep_a_fixed_sample():
    from fedkit.data import load_dataset

    full = load_dataset("digits")
    part = load_dataset("digits", train_samples=100, test_samples=50)
    assert len(part.y_train) == 100 and len(part.y_test) == 50
    again = load_dataset("digits", train_samples=100)
    assert torch.equal(again.x_train, part.x_train) and len(again.y_test) == len(full.y_test)
    rows = [(full.x_train == x).all(dim=(1, 2, 3)).nonzero()[0].item() for x in part.x_train[:5]]
    assert rows == sorted(rows)  # original order kept
    with pytest.raises(ConfigError, match="train_samples"):
        load_dataset("digits", train_samples=10**6)

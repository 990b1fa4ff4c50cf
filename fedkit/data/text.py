"""Text classification files: GLUE SST-2, QNLI and QQP (tsv) and 20 Newsgroups "bydate" (tar.gz), read, fetched and
tokenized."""
from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

import numpy as np
import torch

from ..errors import DataFileError, DataNotFoundError
from .fetch import fetch, write_whole

GLUE_HOST = "https://dl.fbaipublicfiles.com/glue/data/"
SST2_URLS = [GLUE_HOST + "SST-2.zip"]
SST2_MD5 = {"train.tsv": "da409a0a939379ed32a470bc0f7fe99a", "dev.tsv": "268856b487b2a31a28c0a93daaff7288"}
# GLUE task -> (zip on GLUE_HOST, its folder, md5 of train.tsv and dev.tsv; None: only the members are checked)
GLUE_ZIPS = {"sst2": ("SST-2.zip", "SST-2", SST2_MD5), "qnli": ("QNLIv2.zip", "QNLI", None),
             "qqp": ("QQP-clean.zip", "QQP", None)}
# sentence-pair task -> (first text's column, second's, label column, label strings -> 0/1, skip malformed rows)
GLUE_PAIRS = {"qnli": ("question", "sentence", "label", {"entailment": 0, "not_entailment": 1}, False),
              "qqp": ("question1", "question2", "is_duplicate", {"0": 0, "1": 1}, True)}
NEWSGROUPS_FILE = "20news-bydate.tar.gz"
NEWSGROUPS_URLS = ["http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz",
                   "https://ndownloader.figshare.com/files/5975967"]  # the second: scikit-learn's copy
NEWSGROUPS_SHA256 = "8f1b2514ca22a5ade8fbb9cfa5727df95fa587f4c87b786e15c759fa66d95610"  # scikit-learn's


def read_sst2(path: Path) -> tuple[list[str], np.ndarray]:
    """(sentences, int64 labels) of a GLUE SST-2 file: a header naming ``sentence`` and ``label``, tab-separated."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as e:
        raise DataFileError(f"{path} is not UTF-8 text ({e})") from None
    header = lines[0].rstrip("\r").split("\t")
    if "sentence" not in header or "label" not in header:
        raise DataFileError(f"{path} has no GLUE header naming 'sentence' and 'label' (got {lines[0]!r})")
    s, y = header.index("sentence"), header.index("label")
    texts, labels = [], []
    for number, line in enumerate(lines[1:], 2):
        fields = line.rstrip("\r").split("\t")
        if fields == [""]:
            continue
        if len(fields) != len(header) or fields[y] not in ("0", "1"):
            raise DataFileError(f"{path}, line {number}: expected {len(header)} tab-separated fields and label 0 "
                                f"or 1, got {line[:80]!r}")
        texts.append(fields[s])
        labels.append(int(fields[y]))
    return texts, np.array(labels, dtype=np.int64)


def read_pairs(path: Path, task: str) -> tuple[list[str], list[str], np.ndarray]:
    """(first texts, second texts, int64 labels) of a GLUE sentence-pair file of ``task`` (see GLUE_PAIRS): a header
    naming the columns, tab-separated. Malformed rows (a field missing, an empty text, an unknown label) are errors,
    except for qqp, whose copies hold a few: they are skipped."""
    first, second, label, classes, skip = GLUE_PAIRS[task]
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as e:
        raise DataFileError(f"{path} is not UTF-8 text ({e})") from None
    header = lines[0].rstrip("\r").split("\t")
    if not {first, second, label} <= set(header):
        raise DataFileError(f"{path} has no GLUE header naming {first!r}, {second!r} and {label!r} "
                            f"(got {lines[0][:80]!r})")
    a, b, y = header.index(first), header.index(second), header.index(label)
    texts_a, texts_b, labels = [], [], []
    for number, line in enumerate(lines[1:], 2):
        fields = line.rstrip("\r").split("\t")
        if fields == [""]:
            continue
        if len(fields) != len(header) or not fields[a] or not fields[b] or fields[y] not in classes:
            if skip:
                continue
            raise DataFileError(f"{path}, line {number}: expected {len(header)} tab-separated fields, two texts and "
                                f"label {' or '.join(classes)}, got {line[:80]!r}")
        texts_a.append(fields[a])
        texts_b.append(fields[b])
        labels.append(classes[fields[y]])
    return texts_a, texts_b, np.array(labels, dtype=np.int64)


def read_newsgroups(path: Path) -> tuple[dict[str, tuple[list[str], np.ndarray]], list[str]]:
    """({"train": (texts, labels), "test": ...}, the 20 group names) of the bydate archive: members
    ``20news-bydate-{train,test}/<group>/<id>``, latin-1, each message's header (everything before the first blank
    line) removed like scikit-learn's ``remove=("headers",)`` (it names the group); labels index the sorted group
    names, messages in (group, id) order."""
    found: dict[str, dict[tuple[str, str], str]] = {"train": {}, "test": {}}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                parts = [p for p in PurePosixPath(member.name).parts if p != "."]
                if member.isfile() and len(parts) == 3 and parts[0] in ("20news-bydate-train", "20news-bydate-test"):
                    text = tar.extractfile(member).read().decode("latin-1")
                    found[parts[0].rsplit("-", 1)[1]][parts[1], parts[2]] = text.partition("\n\n")[2]
    except (tarfile.TarError, OSError, EOFError) as e:
        raise DataFileError(f"{path} is not a readable tar.gz ({type(e).__name__}: {e})") from None
    groups = sorted({group for group, _ in found["train"]})
    if not groups or not found["test"] or not {group for group, _ in found["test"]} <= set(groups):
        raise DataFileError(f"{path} does not hold messages 20news-bydate-train/<group>/<id> and "
                            "20news-bydate-test/<group>/<id> of the same groups")
    index = {group: i for i, group in enumerate(groups)}
    splits = {split: ([docs[k] for k in sorted(docs)], np.array([index[g] for g, _ in sorted(docs)], dtype=np.int64))
              for split, docs in found.items()}
    return splits, groups


def tokenize(texts: list[str], tokenizer, max_length: int, pairs: list[str] | None = None) -> torch.Tensor:
    """int64 token ids [n, max_length]: truncated, right-padded with the tokenizer's pad id; with ``pairs``, each
    text and its pair as one input (the tokenizer's pair format, the longer text truncated first)."""
    ids = tokenizer(texts, pairs, padding="max_length", truncation=True, max_length=max_length, return_tensors="np")
    return torch.from_numpy(ids["input_ids"].astype(np.int64))


def download_glue(task: str, directory: Path) -> None:
    """train.tsv and dev.tsv from GLUE's zip of ``task`` (see GLUE_ZIPS), each checked against its md5 where known."""
    file, folder, md5s = GLUE_ZIPS[task]
    url = GLUE_HOST + file
    data = fetch(task, directory, [url])
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            files = {name: z.read(f"{folder}/{name}") for name in ("train.tsv", "dev.tsv")}
    except (zipfile.BadZipFile, KeyError) as e:
        raise DataNotFoundError(f"{task}: the download from {url} is not GLUE's {file} ({e}). Fix: put "
                                f"train.tsv and dev.tsv in {directory}.") from None
    for name, content in files.items():
        if md5s is not None and hashlib.md5(content).hexdigest() != md5s[name]:
            raise DataNotFoundError(f"{task}: {folder}/{name} of the download from {url} does not have GLUE's "
                                    f"md5 {md5s[name]}. Fix: put train.tsv and dev.tsv in {directory}.")
    for name, content in files.items():
        write_whole(directory / name, content)


def download_newsgroups(directory: Path) -> None:
    """The bydate archive, checked against scikit-learn's sha256 (a mirror that sends other bytes is skipped)."""
    write_whole(directory / NEWSGROUPS_FILE, fetch("20newsgroups", directory, NEWSGROUPS_URLS, NEWSGROUPS_SHA256))

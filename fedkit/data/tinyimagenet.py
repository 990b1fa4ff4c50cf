"""Tiny ImageNet (cs231n's tiny-imagenet-200): read from the zip or the folder it extracts to, and fetched.

Layout (inside ``tiny-imagenet-200/``): ``wnids.txt`` (the 200 class ids, one a line: label order),
``train/<wnid>/images/*.JPEG`` (500 a class) and ``val/images/*.JPEG`` with ``val/val_annotations.txt`` (file, wnid
and a box, tab-separated); ``test/`` has no labels and is not read. Images are 64×64, some grayscale (made RGB).
"""
from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

from ..errors import DataFileError
from .fetch import fetch, write_whole

FOLDER, ZIP = "tiny-imagenet-200", "tiny-imagenet-200.zip"
URL = "http://cs231n.stanford.edu/tiny-imagenet-200.zip"
MD5 = "90528d7ca1a48142e341f4ef8d21d0de"
SIZE = 64


def find(directory: Path) -> Path | None:
    """The extracted folder (if it holds wnids.txt), else the zip, else None."""
    if (directory / FOLDER / "wnids.txt").is_file():
        return directory / FOLDER
    return directory / ZIP if (directory / ZIP).is_file() else None


def read_tinyimagenet(source: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train uint8 [n, 3, 64, 64], train int64 labels, val images, val labels) of the folder or zip ``source``;
    labels index wnids.txt, train images in (class, file name) order, val images in val_annotations.txt's order."""
    try:
        if source.suffix == ".zip":
            with zipfile.ZipFile(source) as z:
                prefix = f"{FOLDER}/"
                names = [n[len(prefix):] for n in z.namelist() if n.startswith(prefix)]
                return _read(source, names, lambda name: z.read(prefix + name))
        names = [p.relative_to(source).as_posix() for p in source.glob("train/*/images/*")]
        return _read(source, names, lambda name: (source / name).read_bytes())
    except (zipfile.BadZipFile, OSError, KeyError, UnicodeDecodeError) as e:
        raise DataFileError(f"{source} is not a readable {ZIP} or its extracted folder "
                            f"({type(e).__name__}: {e})") from None


def _read(source: Path, names: list[str], read) -> tuple[np.ndarray, ...]:
    wnids = read("wnids.txt").decode().split()
    index = {wnid: i for i, wnid in enumerate(wnids)}
    train = sorted((index[parts[1]], name) for name in names
                   if len(parts := name.split("/")) == 4 and parts[0] == "train" and parts[2] == "images"
                   and parts[1] in index)
    val = []
    for number, line in enumerate(read("val/val_annotations.txt").decode().splitlines(), 1):
        fields = line.split("\t")
        if len(fields) < 2 or fields[1] not in index:
            raise DataFileError(f"{source}: val/val_annotations.txt, line {number}: expected a file name and one of "
                                f"the wnids, got {line[:80]!r}")
        val.append((index[fields[1]], f"val/images/{fields[0]}"))
    if not wnids or not train or not val:
        raise DataFileError(f"{source} holds no classes in wnids.txt, images train/<wnid>/images/* or rows in "
                            "val/val_annotations.txt")
    return (*_decode(source, train, read), *_decode(source, val, read))


def _decode(source: Path, items: list[tuple[int, str]], read) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image, UnidentifiedImageError

    pixels = np.empty((len(items), 3, SIZE, SIZE), dtype=np.uint8)
    for i, (_, name) in enumerate(items):
        try:
            with Image.open(io.BytesIO(read(name))) as image:
                rgb = np.asarray(image.convert("RGB"))
        except UnidentifiedImageError:
            raise DataFileError(f"{source}: {name} is not an image") from None
        if rgb.shape != (SIZE, SIZE, 3):
            raise DataFileError(f"{source}: {name} is {rgb.shape[1]}×{rgb.shape[0]}, not {SIZE}×{SIZE}")
        pixels[i] = rgb.transpose(2, 0, 1)
    return pixels, np.array([label for label, _ in items], dtype=np.int64)


def download(directory: Path) -> None:
    """cs231n's zip (about 237 MB), checked against its md5, into ``directory`` (read without extracting)."""
    write_whole(directory / ZIP, fetch("tinyimagenet", directory, [URL], md5=MD5))

"""Reader of the IDX format of MNIST-like files (LeCun et al.), plain or gzip-compressed."""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from ..errors import DataFileError

# IDX element type code (third magic byte) -> big-endian numpy dtype
_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: Path) -> np.ndarray:
    """The array stored in the IDX file ``path`` (gunzipped first when the name ends in .gz).

    A file that cannot be read (truncated gzip, bad header, wrong size) raises DataFileError naming it.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError; a truncated gzip an EOFError
        raise DataFileError(f"{path} cannot be read ({e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _DTYPES:
        raise DataFileError(f"{path} is not an IDX file (bad magic number {raw[:4].hex()})")
    ndim, dtype = raw[3], np.dtype(_DTYPES[raw[2]])
    offset = 4 + 4 * ndim
    if len(raw) < offset:
        raise DataFileError(f"{path} is truncated: {len(raw)} bytes, shorter than its {offset}-byte header")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    if len(raw) - offset != int(np.prod(shape)) * dtype.itemsize:
        raise DataFileError(f"{path}: header says shape {shape} but {len(raw) - offset} data bytes follow")
    return np.frombuffer(raw, dtype, offset=offset).reshape(shape).astype(dtype.newbyteorder("="))

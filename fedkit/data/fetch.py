"""Downloads of data files: the first mirror that answers with the expected checksum, written whole or not at all."""
from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path

from ..errors import DataNotFoundError


def fetch(name: str, directory: Path, urls: list[str], sha256: str | None = None,
           md5: str | None = None) -> bytes:
    """The bytes of the first of ``urls`` that answers (with ``sha256`` / ``md5``, if given); DataNotFoundError if
    none does."""
    error = None
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        except OSError as e:
            error = repr(e)
            continue
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            error = f"{url} sent a file whose sha256 is not {sha256}"
        elif md5 is not None and hashlib.md5(data).hexdigest() != md5:
            error = f"{url} sent a file whose md5 is not {md5}"
        else:
            return data
    raise DataNotFoundError(f"{name}: downloading into {directory} failed (tried {', '.join(urls)}): {error}. Fix: "
                            f"check the network, or put the files in {directory}.")


def write_whole(path: Path, content: bytes) -> None:
    """``content`` into ``path``, whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_bytes(content)
    part.replace(path)

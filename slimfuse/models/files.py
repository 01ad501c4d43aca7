"""Model files on disk: their sha256, and moving a rejected file aside."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def move_aside(path: Path) -> Path:
    """Rename `path` to the first free NAME.rejected-<n> beside it."""
    n = 1
    while (aside := path.with_name(f"{path.name}.rejected-{n}")).exists():
        n += 1
    os.rename(path, aside)
    return aside

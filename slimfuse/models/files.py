"""Model files on disk: their sha256, their size in words, and moving a rejected file aside."""
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


def size_text(size: int) -> str:
    """A file size as people read it: "555.3 MB", or "12 kB" below 0.1 MB."""
    return f"{size / 1e6:.1f} MB" if size >= 1e5 else f"{size / 1e3:.0f} kB"

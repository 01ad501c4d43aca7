"""A publisher's CRC32 of a model file: FaceFusion puts NAME.hash beside each NAME.onnx of a release, holding the
file's CRC32 as 8 lowercase hex digits and nothing else (FaceFusion compares the file's whole text with
format(zlib.crc32(data), '08x')). slimfuse reads it to check a trust-on-first-use download before trusting it."""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

CRC32_TEXT = re.compile(r"[0-9a-f]{8}")


@dataclass(frozen=True)
class PublisherHash:
    """What NAME.hash said: the CRC32 (None when it could not be had) and, if so, why not."""

    url: str
    crc32: str | None
    problem: str | None = None


def hash_url(url: str) -> str:
    """The address of the publisher's NAME.hash beside the file at `url` (the last path segment's extension
    replaced)."""
    parts = urlsplit(url)
    folder, _, name = parts.path.rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return urlunsplit(parts._replace(path=f"{folder}/{stem}.hash"))


def crc32_file(path: Path) -> str:
    """The file's CRC32 as FaceFusion writes it: 8 lowercase hex digits."""
    crc = 0
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return f"{crc:08x}"


def fetch(url: str, timeout: float = 30.0) -> PublisherHash:
    """Fetch the NAME.hash at `url`; its CRC32, or None and why when it cannot be fetched or is not one."""
    import requests  # imported when a download happens, as slimfuse.models.download does

    try:
        with requests.get(url, timeout=timeout, stream=True) as response:
            if response.status_code != 200:
                return PublisherHash(url, None, f"HTTP {response.status_code}")
            head = next(response.iter_content(chunk_size=64), b"")  # a CRC32 is 8 bytes: never read a large body
    except requests.RequestException as exc:
        return PublisherHash(url, None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    text = head.decode("ascii", errors="replace").strip().lower()  # a newline or upper case is still the CRC32
    if not CRC32_TEXT.fullmatch(text):
        return PublisherHash(url, None, f"not a CRC32 (8 hex digits): {text[:20]!r}")
    return PublisherHash(url, text)

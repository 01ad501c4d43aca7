"""A trust-on-first-use download is checked before it is trusted: against the sha256 public sources state for the
publisher's file where there is one, else against the publisher's NAME.hash (FaceFusion's CRC32 beside the file).
Downloads announce the model's licence and size before their body is read.

Everything runs against a loopback HTTP server holding a stand-in model and its NAME.hash, through the real store
and command line."""
from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import neural_models as nm
from loopback import Served, file_server
from slimfuse.cli.main import main
from slimfuse.errors import ModelCorruptError
from slimfuse.models.catalog import Catalog
from slimfuse.models.spec import ModelSpec, Published
from slimfuse.models.store import Store, sha256_file

UNPUBLISHED = "gfpgan_1.3"  # no sha256 published: its download is checked against FaceFusion's NAME.hash
PUBLISHED_NAME = "gfpgan_1.4"


@pytest.fixture
def server() -> Iterator[Served]:
    with file_server() as served:
        yield served


@pytest.fixture
def payload(tmp_path: Path) -> bytes:
    """A real ONNX file of gfpgan_1.3's signature, a little over 0.1 MB (so its size reads in MB)."""
    return nm.save(nm.padded(nm.identity_enhancer(UNPUBLISHED), 150_000), tmp_path / "upstream", UNPUBLISHED).read_bytes()


def crc32_text(data: bytes) -> bytes:
    return f"{zlib.crc32(data):08x}".encode()


def served_spec(server: Served, name: str, payload: bytes, hash_text: bytes | None, **changes: object) -> ModelSpec:
    """`name`'s catalog entry, its address on the loopback server, serving `payload` and NAME.hash `hash_text`."""
    server.files[f"/models-3.0.0/{name}.onnx"] = payload
    if hash_text is not None:
        server.files[f"/models-3.0.0/{name}.hash"] = hash_text
    return replace(Catalog().get(name), urls=(f"{server.base}/models-3.0.0/{name}.onnx",), **changes)


def records(home: Path) -> dict[str, dict[str, object]]:
    path = home / "recorded_sha256.json"
    return json.loads(path.read_text()) if path.exists() else {}


def leftovers(home: Path) -> list[str]:
    """Everything a download left in the models folder and the partial-download folder."""
    return sorted(path.name for folder in (home / "models", home / "partial") if folder.is_dir()
                  for path in folder.iterdir())


def test_a_download_matching_its_publishers_crc32_is_recorded(tmp_path: Path, server: Served, payload: bytes) -> None:
    spec = served_spec(server, UNPUBLISHED, payload, crc32_text(payload))
    messages: list[str] = []
    home = tmp_path / "home"
    path = Store(home=home, catalog=Catalog((spec,)), notify=messages.append).path(UNPUBLISHED)
    assert path.read_bytes() == payload
    assert records(home)[UNPUBLISHED]["sha256"] == sha256_file(path)
    assert not any("could not be fetched" in message for message in messages)
    announced = next(message for message in messages if "downloading" in message)
    size = f"{len(payload) / 1e6:.1f} MB"  # no size in the catalog: the server's Content-Length
    assert announced == (f"{UNPUBLISHED}: downloading {spec.urls[0]} ({size}; licence: Apache-2.0 (GFPGAN, "
                         "TencentARC))")
    assert leftovers(home) == ["gfpgan_1.3.onnx"]


@pytest.mark.parametrize("hash_text", [b"00000000", b"DEADBEEF\n"], ids=["other crc", "upper case, newline"])
def test_a_download_failing_its_publishers_crc32_is_not_kept(tmp_path: Path, server: Served, payload: bytes,
                                                           hash_text: bytes) -> None:
    spec = served_spec(server, UNPUBLISHED, payload, hash_text)
    home = tmp_path / "home"
    with pytest.raises(ModelCorruptError) as caught:
        Store(home=home, catalog=Catalog((spec,)), notify=lambda message: None).path(UNPUBLISHED)
    error = caught.value
    assert error.exit_code == 15 and "\n" not in error.message
    assert crc32_text(payload).decode() in error.message and "it was not kept" in error.message
    assert hash_text.strip().lower().decode() in error.message
    assert f"{server.base}/models-3.0.0/gfpgan_1.3.hash" in error.message
    assert leftovers(home) == [] and records(home) == {}  # no file, no temporary, no partial, no record


@pytest.mark.parametrize(("hash_text", "why"), [(None, "HTTP 404"), (b"<html>not found</html>", "not a CRC32")])
def test_a_missing_hash_file_is_a_notice_and_the_file_is_trusted(tmp_path: Path, server: Served, payload: bytes,
                                                                 hash_text: bytes | None, why: str) -> None:
    spec = served_spec(server, UNPUBLISHED, payload, hash_text)
    messages: list[str] = []
    home = tmp_path / "home"
    path = Store(home=home, catalog=Catalog((spec,)), notify=messages.append).path(UNPUBLISHED)
    notices = [message for message in messages if "could not be fetched" in message]
    assert len(notices) == 1 and why in notices[0] and "trusted on first use without it" in notices[0]
    assert records(home)[UNPUBLISHED]["sha256"] == sha256_file(path)


def test_a_download_is_checked_against_its_published_sha256(tmp_path: Path, server: Served, payload: bytes) -> None:
    published = Published(hashlib.sha256(payload).hexdigest(), len(payload))
    good = served_spec(server, PUBLISHED_NAME, payload, None, published=published)
    messages: list[str] = []
    home = tmp_path / "good"
    path = Store(home=home, catalog=Catalog((good,)), notify=messages.append).path(PUBLISHED_NAME)
    assert sha256_file(path) == published.sha256 and records(home)[PUBLISHED_NAME]["sha256"] == published.sha256
    # The published sha256 settles it: no NAME.hash is asked for, and the file is the publisher's.
    assert not any("could not be fetched" in message or "differs" in message for message in messages)

    other = served_spec(server, PUBLISHED_NAME, payload, crc32_text(payload), published=Published("0" * 64, 1))
    home = tmp_path / "other"
    with pytest.raises(ModelCorruptError) as caught:
        Store(home=home, catalog=Catalog((other,)), notify=lambda message: None).path(PUBLISHED_NAME)
    assert "is not the published one (sha256 " + "0" * 64 in caught.value.message
    assert "\n" not in caught.value.message and leftovers(home) == [] and records(home) == {}


def test_the_catalogs_published_size_is_announced(tmp_path: Path, server: Served, payload: bytes) -> None:
    # The catalog's size is shown (not the server's), so a user sees it even from a server that sends none.
    published = Published(hashlib.sha256(payload).hexdigest(), 340_299_087)
    spec = served_spec(server, PUBLISHED_NAME, payload, None, published=published)
    messages: list[str] = []
    Store(home=tmp_path / "home", catalog=Catalog((spec,)), notify=messages.append).path(PUBLISHED_NAME)
    assert any(message.endswith("(340.3 MB; licence: Apache-2.0 (GFPGAN, TencentARC))") for message in messages)


def test_a_resumed_download_announces_the_whole_size(tmp_path: Path, server: Served, payload: bytes) -> None:
    spec = served_spec(server, UNPUBLISHED, payload, crc32_text(payload))
    home = tmp_path / "home"
    (home / "partial").mkdir(parents=True)
    (home / "partial" / "gfpgan_1.3.onnx.part").write_bytes(payload[:40_000])  # an earlier download stopped here
    messages: list[str] = []
    path = Store(home=home, catalog=Catalog((spec,)), notify=messages.append).path(UNPUBLISHED)
    assert path.read_bytes() == payload and server.ranges[0] == "bytes=40000-"
    assert any(f"({len(payload) / 1e6:.1f} MB; licence" in message for message in messages)


@pytest.fixture
def cli_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ModelSpec]]:
    """`slimfuse models` on a store in tmp_path whose catalog is the specs the test appends."""
    specs: list[ModelSpec] = []
    monkeypatch.setattr("slimfuse.cli.models.make_store",
                        lambda args: Store(home=tmp_path / "home", models_dir=args.models_dir, catalog=Catalog(tuple(specs))))
    yield specs


def test_models_fetch_prints_licence_and_size_before_the_download(server: Served, payload: bytes,
                                                                   cli_store: list[ModelSpec],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    cli_store.append(served_spec(server, UNPUBLISHED, payload, crc32_text(payload)))
    assert main(["models", "fetch", UNPUBLISHED]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    announced = next(index for index, line in enumerate(lines) if "downloading" in line)
    ready = next(index for index, line in enumerate(lines) if "ready at" in line)
    assert announced < ready
    assert lines[announced].endswith(f"({len(payload) / 1e6:.1f} MB; licence: Apache-2.0 (GFPGAN, TencentARC))")
    assert captured.out.strip().endswith("gfpgan_1.3.onnx")


def test_models_fetch_of_a_file_failing_its_crc32_exits_15(server: Served, payload: bytes, tmp_path: Path,
                                                            cli_store: list[ModelSpec],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    cli_store.append(served_spec(server, UNPUBLISHED, payload, b"0badc0de"))
    assert main(["models", "fetch", UNPUBLISHED]) == 15
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("slimfuse: ") and "CRC32" in err[-1] and "0badc0de" in err[-1]
    assert not any(line.startswith("slimfuse: ") and "Traceback" in line for line in err)
    assert leftovers(tmp_path / "home") == []

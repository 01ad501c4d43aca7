"""The model store: verification, re-fetch of corrupt files, the package-index and HTTPS sources."""
from __future__ import annotations

import hashlib
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from slimfuse.errors import ModelUnavailableError
from loopback import Served, file_server
from slimfuse.models.catalog import Catalog
from slimfuse.models.spec import ModelSpec, PackageArchive
from slimfuse.models.store import Store, sha256_file

PREDICTOR = "dlib_shape_predictor_5"




def test_corrupt_model_is_removed_and_fetched_again(tmp_path: Path, store: Store,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    real = store.path(PREDICTOR)
    placed = tmp_path / "placed"
    placed.mkdir()
    shutil.copyfile(real, placed / real.name)
    messages: list[str] = []
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    broken = home / "models" / real.name
    broken.write_bytes(real.read_bytes()[: real.stat().st_size // 2])  # a partial download
    fresh = Store(home=home, models_dir=placed, notify=messages.append)
    path = fresh.path(PREDICTOR)
    assert sha256_file(path) == fresh.catalog.get(PREDICTOR).sha256
    assert any(record.levelname == "WARNING" and "failed sha256" in record.getMessage()
               and "fetching it again" in record.getMessage() for record in caplog.records)
    assert fresh.status(PREDICTOR).verified


def test_no_source_names_every_source_tried(tmp_path: Path) -> None:
    archive = PackageArchive(requirement="slimfuse-no-such-package==0.0.1", filename="nothing.whl", sha256="0" * 64)
    spec = ModelSpec(name="ghost", kind="detector", licence="none", filename="ghost.onnx", sha256="0" * 64, size=1,
                     description="", source_name="ghost.onnx", source_sha256="0" * 64, archive=archive,
                     member="ghost.onnx", urls=("http://127.0.0.1:9/ghost.onnx",))
    empty = tmp_path / "empty"
    empty.mkdir()
    store = Store(home=tmp_path / "home", models_dir=empty, catalog=Catalog((spec,)), notify=lambda m: None)
    with pytest.raises(ModelUnavailableError) as caught:
        store.path("ghost")
    message = caught.value.message
    assert "ghost" in message and "--models-dir FOLDER" in message and "3 sources tried" in message
    tried = " ".join(caught.value.tried)
    for part in (str(empty), "127.0.0.1:9", "slimfuse-no-such-package==0.0.1"):
        assert part in tried and part in str(caught.value.__cause__)
    assert not (tmp_path / "home" / "models" / "ghost.onnx").exists()


def _wheel(folder: Path, member: str, payload: bytes) -> Path:
    """A real, minimal wheel of a made-up package holding one data file."""
    name = "slimfuse_testdata-1.0-py3-none-any.whl"
    path = folder / name
    info = "slimfuse_testdata-1.0.dist-info"
    files = {
        member: payload,
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: slimfuse-testdata\nVersion: 1.0\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{key},,\n" for key in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as bundle:
        for key, data in files.items():
            bundle.writestr(key, data)
        bundle.writestr(f"{info}/RECORD", record)
    return path


def test_package_source_goes_through_pip_with_the_users_index_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = b"model bytes " * 1000
    index = tmp_path / "index"
    index.mkdir()
    wheel = _wheel(index, "slimfuse_testdata/model.bin", payload)
    # pip reads its settings from the environment: this stands in for a user's private index.
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    archive = PackageArchive(requirement="slimfuse-testdata==1.0", filename=wheel.name, sha256=sha256_file(wheel))
    digest = hashlib.sha256(payload).hexdigest()
    spec = ModelSpec(name="testdata", kind="detector", licence="none", filename="model.bin", sha256=digest,
                     size=len(payload), description="", source_name="model.bin", source_sha256=digest,
                     archive=archive, member="slimfuse_testdata/model.bin")
    store = Store(home=tmp_path / "home", catalog=Catalog((spec,)), notify=lambda m: None)
    assert store.path("testdata").read_bytes() == payload

    tampered = replace(archive, sha256="1" * 64)
    other = Store(home=tmp_path / "home2", catalog=Catalog((replace(spec, archive=tampered),)), notify=lambda m: None)
    with pytest.raises(ModelUnavailableError) as caught:
        other.path("testdata")
    assert "failed sha256 verification" in caught.value.tried[-1]


@pytest.fixture
def server() -> Iterator[Served]:
    with file_server() as served:
        yield served


def test_url_source_resumes_a_partial_download(tmp_path: Path, server: Served) -> None:
    payload = bytes(range(256)) * 4000
    server.files["/model.bin"] = payload
    digest = hashlib.sha256(payload).hexdigest()
    spec = ModelSpec(name="remote", kind="detector", licence="none", filename="model.bin", sha256=digest,
                     size=len(payload), description="", source_name="model.bin", source_sha256=digest,
                     urls=(f"{server.base}/model.bin",))
    home = tmp_path / "home"
    partial = home / "partial" / f"{digest}.part"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(payload[:300_000])  # an earlier, interrupted download
    store = Store(home=home, catalog=Catalog((spec,)), notify=lambda m: None)
    assert store.path("remote").read_bytes() == payload
    assert server.ranges == ["bytes=300000-"]
    assert not partial.exists()

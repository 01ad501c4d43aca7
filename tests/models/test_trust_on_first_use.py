"""Neural models users bring: trust on first use, verification after, and bad files rejected and moved aside.

Everything goes through the real store and command line, with stand-in models placed the way a user places the
real ones (--models-dir, or $SLIMFUSE_HOME/models, or a download from the entry's URL).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import neural_models as nm
from loopback import Served, file_server
from slimfuse.cli.main import main
from slimfuse.errors import EXIT_CODES, ModelCorruptError, ModelInvalidError
from slimfuse.models.catalog import Catalog
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store, sha256_file

SWAPPER = "inswapper_128"


@pytest.fixture
def home(tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated $SLIMFUSE_HOME sharing the embedded models with the real store."""
    folder = tmp_path / "home"
    nm.isolated_store(folder, store)
    monkeypatch.setenv("SLIMFUSE_HOME", str(folder))
    return folder


@pytest.fixture
def placed(tmp_path: Path) -> Path:
    """A --models-dir with an identity inswapper and an ArcFace stand-in."""
    folder = tmp_path / "placed"
    nm.save(nm.inswapper(), folder, SWAPPER)
    nm.save(nm.recognizer(), folder, "arcface_w600k_r50")
    return folder


def _records(home: Path) -> dict[str, dict[str, object]]:
    return json.loads((home / "recorded_sha256.json").read_text())


def test_a_placed_file_is_recorded_on_first_use_and_verified_after(home: Path, placed: Path) -> None:
    messages: list[str] = []
    store = Store(home=home, models_dir=placed, notify=messages.append)
    path = store.path(SWAPPER)
    assert path == placed / "inswapper_128.onnx"  # used in place, not copied
    assert not (home / "models" / "inswapper_128.onnx").exists()
    digest = sha256_file(path)
    assert _records(home)[SWAPPER]["sha256"] == digest
    assert any("recorded (trust on first use)" in message for message in messages)
    # A stand-in is not FaceFusion's file: placed by hand, it is trusted all the same, with a notice.
    published = Catalog().get(SWAPPER).published
    assert published is not None and published.sha256 != digest
    assert any("differs from the publisher's file" in message and published.sha256 in message for message in messages)
    status = store.status(SWAPPER)
    assert status.pinning == "published" and status.recorded == digest and status.verified

    later: list[str] = []  # a later run verifies against the record and records nothing new
    assert Store(home=home, models_dir=placed, notify=later.append).path(SWAPPER) == path
    assert later == []


def test_a_tampered_file_is_rejected_and_moved_aside(home: Path, placed: Path) -> None:
    Store(home=home, models_dir=placed, notify=lambda m: None).path(SWAPPER)
    recorded = _records(home)[SWAPPER]["sha256"]
    path = placed / "inswapper_128.onnx"
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF  # one flipped bit in the emap
    path.write_bytes(bytes(data))
    with pytest.raises(ModelCorruptError) as caught:
        Store(home=home, models_dir=placed, notify=lambda m: None).path(SWAPPER)
    message = caught.value.message
    assert "\n" not in message and SWAPPER in message and str(recorded) in message
    assert sha256_file(placed / "inswapper_128.onnx.rejected-1") in message
    assert not path.exists() and (placed / "inswapper_128.onnx.rejected-1").exists()
    assert _records(home)[SWAPPER]["sha256"] == recorded  # the trusted hash is kept


def test_a_file_in_the_model_folder_is_trusted_on_first_use_too(home: Path) -> None:
    nm.save(nm.recognizer(), home / "models", "arcface_w600k_r50")
    store = Store(home=home, notify=lambda m: None)
    path = store.path("arcface_w600k_r50")
    assert path == home / "models" / "arcface_w600k_r50.onnx"
    assert _records(home)["arcface_w600k_r50"]["sha256"] == sha256_file(path)


@pytest.fixture
def server() -> Iterator[Served]:
    with file_server() as served:
        yield served


def test_a_download_is_recorded_on_the_first_successful_fetch(tmp_path: Path, server: Served) -> None:
    base = server.base
    payload = (nm.save(nm.recognizer(), tmp_path / "upstream", "arcface_w600k_r50")).read_bytes()
    server.files["/arcface_w600k_r50.onnx"] = payload
    spec = replace(Catalog().get("arcface_w600k_r50"), urls=(f"{base}/missing.onnx", f"{base}/arcface_w600k_r50.onnx"),
                   published=None)  # the stand-in is not FaceFusion's file
    store = Store(home=tmp_path / "home", catalog=Catalog((spec,)), notify=lambda m: None)
    path = store.path("arcface_w600k_r50")
    assert path.read_bytes() == payload
    assert _records(tmp_path / "home")["arcface_w600k_r50"]["sha256"] == sha256_file(path)


def _swap(*extra: str, source: Path, target: Path, output: Path, placed: Path) -> list[str]:
    return ["swap", "-s", str(source), "-t", str(target), "-o", str(output), "--models-dir", str(placed),
            "--face-swapper-model", SWAPPER, "--quiet", *extra]


def _bad_files() -> dict[str, object]:
    return {
        "not onnx": lambda path: path.write_bytes(b"PK\x03\x04 this is a zip file, not a model" * 50),
        "truncated": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
        "wrong input shape": lambda path: nm.save(nm.identity_swapper(SWAPPER, target_size=256), path.parent, SWAPPER),
    }


@pytest.mark.parametrize("damage", list(_bad_files()))
def test_a_bad_model_file_stops_the_swap_with_one_line(damage: str, home: Path, placed: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str], astronaut_path: Path,
                                                       grace_hopper_path: Path) -> None:
    path = placed / "inswapper_128.onnx"
    _bad_files()[damage](path)  # type: ignore[operator]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code = main(_swap(source=astronaut_path, target=grace_hopper_path, output=out_dir / "result.png", placed=placed))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 18 and code in EXIT_CODES
    assert len(err) == 1 and err[0].startswith("slimfuse: ") and SWAPPER in err[0]
    assert "expected" in err[0] and "found" in err[0] and "moved aside to inswapper_128.onnx.rejected-1" in err[0]
    if damage == "wrong input shape":
        assert "target[1,3,128,128]" in err[0] and "target[1,3,256,256]" in err[0]
    assert not path.exists() and (placed / "inswapper_128.onnx.rejected-1").exists()
    assert list(out_dir.iterdir()) == []
    assert SWAPPER not in _records(home)  # a rejected file's hash is not trusted


def test_a_tampered_swapper_stops_the_swap_with_exit_15(home: Path, placed: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str], astronaut_path: Path,
                                                        grace_hopper_path: Path) -> None:
    first = tmp_path / "first.png"
    assert main(_swap(source=astronaut_path, target=grace_hopper_path, output=first, placed=placed)) == 0
    assert first.exists() and SWAPPER in _records(home)
    nm.save(nm.inswapper(seed=5), placed, SWAPPER)  # another emap: a different file under the same name
    capsys.readouterr()
    second = tmp_path / "second.png"
    assert main(_swap(source=astronaut_path, target=grace_hopper_path, output=second, placed=placed)) == 15
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and SWAPPER in err[0] and "recorded on first use" in err[0] and "moved aside" in err[0]
    assert not second.exists()


def test_models_list_shows_pinning_and_records(home: Path, placed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "list", "--models-dir", str(placed)]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert " present " in rows[SWAPPER] and "published " in rows[SWAPPER] and " 555.3 MB " in rows[SWAPPER]
    assert "trust-on-first-use " in rows["ghost_1_256"] and " ? " in rows["ghost_1_256"]  # no sha256 published
    assert " pinned " in rows["face_landmark"]
    assert main(["models", "fetch", SWAPPER, "--models-dir", str(placed), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["models", "list", "--models-dir", str(placed)]) == 0
    row = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}[SWAPPER]
    digest = sha256_file(placed / "inswapper_128.onnx")
    assert "published, recorded" in row and " verified " in row and digest[:16] in row
    assert main(["models", "verify", "--models-dir", str(placed)]) == 0


def test_models_fetch_checks_the_inputs_of_a_placed_file(home: Path, placed: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    nm.save(nm.identity_swapper(SWAPPER, target_size=64), placed, SWAPPER)
    assert main(["models", "fetch", SWAPPER, "--models-dir", str(placed), "--quiet"]) == 18
    assert "target[1,3,64,64]" in capsys.readouterr().err
    assert (placed / "inswapper_128.onnx.rejected-1").exists()


def test_the_pool_rejects_a_file_whose_inputs_differ(home: Path, placed: Path) -> None:
    nm.save(nm.identity_enhancer("gpen_bfr_256"), placed, "gfpgan_1.4")  # a 256 px enhancer under a 512 px name
    pool = ModelPool(Store(home=home, models_dir=placed, notify=lambda m: None))
    with pytest.raises(ModelInvalidError) as caught:
        pool.session("gfpgan_1.4")
    assert "expected inputs input[1,3,512,512], found input[1,3,256,256]" in caught.value.message
    assert pool.stats().loads == 0 and pool.stats().resident_bytes == 0

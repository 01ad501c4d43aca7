"""Batches through the real command line: a folder of images with a broken file, the journal and resume, a changed
output or option redone, manifests in CSV and JSON lines with per-row options, and the report."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from slimfuse.batch.journal import JOURNAL_NAME
from slimfuse.cli.main import main


@pytest.fixture
def folder(tmp_path: Path, grace_hopper: np.ndarray, astronaut: np.ndarray) -> Path:
    """Two small portraits and a file that only pretends to be a photo."""
    photos = tmp_path / "photos"
    photos.mkdir()
    Image.fromarray(grace_hopper).resize((256, 320)).save(photos / "hopper.png")
    Image.fromarray(astronaut).resize((256, 256)).save(photos / "astronaut.jpg")
    (photos / "broken.jpg").write_bytes(b"not a photo")
    return photos


def _swap(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["swap", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_folder_is_a_batch_that_resumes(capsys: pytest.CaptureFixture[str], tmp_path: Path, folder: Path,
                                          grace_hopper_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["-s", str(grace_hopper_path), "-t", str(folder), "-o", str(out), "--target-face-size", "128"]
    code, stdout, stderr = _swap(capsys, *argv, "--report", str(tmp_path / "report.json"))
    assert code == 50, stderr
    assert sorted(stdout.split()) == [str(out / "astronaut.jpg"), str(out / "hopper.png")]
    assert "| failed | " in stderr and "broken.jpg: not a readable image" in stderr
    assert "2 done, 0 skipped, 1 failed" in stderr
    assert stderr.strip().splitlines()[-1] == "slimfuse: 1 of 3 items failed"
    assert sorted(path.name for path in out.iterdir()) == [JOURNAL_NAME, "astronaut.jpg", "hopper.png"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["counts"] == {"done": 2, "skipped": 0, "failed": 1} and report["ok"] is False
    failed = [item for item in report["items"] if item["status"] == "failed"]
    assert failed[0]["exit_code"] == 6 and failed[0]["target"].endswith("broken.jpg")

    (folder / "broken.jpg").unlink()
    swapped = np.asarray(Image.open(out / "hopper.png"))
    code, _, stderr = _swap(capsys, *argv)
    assert code == 0 and "0 done, 2 skipped, 0 failed" in stderr, stderr

    Image.fromarray(np.zeros_like(swapped)).save(out / "hopper.png")  # changed since the journal recorded it
    code, _, stderr = _swap(capsys, *argv)
    assert code == 0 and "1 done, 1 skipped, 0 failed" in stderr, stderr
    assert np.array_equal(np.asarray(Image.open(out / "hopper.png")), swapped)

    code, _, stderr = _swap(capsys, *argv[:-1], "192")  # another option: every item again
    assert code == 0 and "2 done, 0 skipped, 0 failed" in stderr, stderr


def test_manifests_in_csv_and_json_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path, folder: Path,
                                         grace_hopper_path: Path, astronaut_path: Path) -> None:
    shutil.copy(grace_hopper_path, tmp_path / "face.png")
    csv = tmp_path / "jobs.csv"
    csv.write_text("source,target,output,face_selector_mode,target_face_size\n"
                   "face.png,photos/astronaut.jpg,a.png,many,128\n"
                   "face.png,photos/hopper.png,b.jpg,,\n"
                   "face.png,photos/missing.png,c.png,,\n")
    code = main(["batch", str(csv), "-o", str(tmp_path / "csv-out"), "--target-face-size", "160"])
    stderr = capsys.readouterr().err
    assert code == 50 and "2 done, 0 skipped, 1 failed" in stderr and "missing.png: file not found" in stderr
    assert Image.open(tmp_path / "csv-out" / "a.png").size == (256, 256)
    lines = (tmp_path / "jobs.jsonl")
    lines.write_text(json.dumps({"sources": [str(astronaut_path)], "target": "photos/hopper.png", "output": "h.webp",
                                 "options": {"output_image_quality": 70}}) + "\n"
                     + json.dumps({"source": "face.png", "target": "photos/astronaut.jpg", "output": "a.png",
                                   "blend": "poisson"}) + "\n")
    assert main(["batch", str(lines)]) == 0
    assert Image.open(tmp_path / "h.webp").format == "WEBP" and (tmp_path / JOURNAL_NAME).is_file()
    assert main(["batch", str(lines)]) == 0
    assert "0 done, 2 skipped" in capsys.readouterr().err


def test_a_manifest_with_an_unknown_option_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest = tmp_path / "jobs.csv"
    manifest.write_text("source,target,output,face_swaper_model\nface.png,t.png,o.png,mesh\n")
    assert main(["batch", str(manifest)]) == 2
    assert capsys.readouterr().err.strip() == f"slimfuse: {manifest}:2: unknown option face_swaper_model"


def test_ray_without_the_extra_is_23_before_any_work(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     folder: Path, grace_hopper_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    (folder / "broken.jpg").unlink()
    code, stdout, stderr = _swap(capsys, "-s", str(grace_hopper_path), "-t", str(folder), "-o", str(tmp_path / "out"),
                                 "--ray", "auto")
    assert code == 23 and stdout == ""
    assert stderr.strip() == "slimfuse: the ray extra is not installed: pip install 'slimfuse[ray]'"
    assert list((tmp_path / "out").iterdir()) == []

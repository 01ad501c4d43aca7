"""--report run.json: options after profile and flags, providers used, the pool's work, memory and time per
stage, for an image and a video run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from slimfuse.bench.clips import make_clip, pan
from slimfuse.cli.main import main


def _report(path: Path) -> dict:  # type: ignore[type-arg]
    report = json.loads(path.read_text())
    assert not list(path.parent.glob(f".{path.name}.*"))  # written atomically: no temporary left behind
    return report


def _check_common(report: dict, output: Path) -> None:  # type: ignore[type-arg]
    assert report["ok"] and report["error"] is None and report["output"] == str(output)
    assert report["config"]["profile"] == "cpu" and report["config"]["target_face_size"] == 400  # flag over profile
    assert report["config"]["frame_enhancer_tile_size"] == 128  # from the profile
    assert report["providers"]["used"]["face_landmark"] == ["cpu"] and report["providers"]["problems"] == []
    assert report["pool"]["loads"] >= 2
    stages = [stage["stage"] for stage in report["stages"]]
    assert stages == ["models", "sources", "processing", "write"]
    for stage in report["stages"]:
        assert stage["seconds"] >= 0 and 0 < stage["rss_mb"] <= stage["tree_rss_mb"] and stage["peak_rss_mb"] > 0
    assert "face_landmark" in report["stages"][2]["resident"]
    assert report["peak_rss_mb"] >= max(stage["peak_rss_mb"] for stage in report["stages"])
    # The kernel's peak is never reset: what an outside tool reads is the run's whole peak.
    assert report["stages"][-1]["peak_so_far_mb"] >= max(stage["peak_rss_mb"] for stage in report["stages"]) - 1
    plan = report["memory_plan"]  # no --memory-budget: nothing limited, the estimate still recorded
    assert plan["budget_mb"] is None and plan["pool_budget_mb"] is None and plan["all_resident"]
    assert plan["estimated_peak_mb"] > 0 and {model["name"] for model in plan["models"]} >= {"face_landmark"}
    assert report["batching"] == {"batch_sizes": {}, "steps": []}


def test_image_report(capsys: pytest.CaptureFixture[str], tmp_path: Path, astronaut_path: Path,
                      grace_hopper_path: Path) -> None:
    output, path = tmp_path / "out.jpg", tmp_path / "run.json"
    assert main(["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(output),
                 "--profile", "cpu", "--target-face-size", "400", "--report", str(path)]) == 0
    report = _report(path)
    _check_common(report, output)
    assert report["inputs"]["sources"] == [str(astronaut_path)] and report["inputs"]["target"] == str(grace_hopper_path)
    assert "face_landmark" in report["pool"]["resident"]  # an image run keeps its models for the next target


def test_identity_model_is_released_after_the_sources(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                      astronaut_path: Path, grace_hopper_path: Path) -> None:
    """Two source photos load the identity model (are they one person?); outside reference mode nothing needs it
    after that, so the pool drops it before the target is processed."""
    output, path = tmp_path / "out.jpg", tmp_path / "run.json"
    assert main(["swap", "-s", str(astronaut_path), str(astronaut_path), "-t", str(grace_hopper_path), "-o",
                 str(output), "--report", str(path)]) == 0
    report = _report(path)
    identity = {"dlib_shape_predictor_5", "dlib_face_recognition_resnet"}
    loaded = {name for name, _ in report["pool"]["loads_by_model"]}
    sources = report["stages"][1]
    assert identity <= loaded and identity <= set(sources["released"]) and not identity & set(sources["resident"])
    assert "face_landmark" in sources["resident"] and report["pool"]["releases"] >= 2


def test_video_report(capsys: pytest.CaptureFixture[str], tmp_path: Path, astronaut_path: Path,
                      grace_hopper: np.ndarray) -> None:
    clip = make_clip(tmp_path / "pan.mp4", pan(grace_hopper, (640, 360), 12), fps=25)
    output, path = tmp_path / "out.mp4", tmp_path / "run.json"
    assert main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(output), "--profile", "cpu",
                 "--target-face-size", "400", "--report", str(path), "--quiet"]) == 0
    report = _report(path)
    _check_common(report, output)
    results = report["results"]
    assert results["frames_written"] == 12 and results["frames"] == 12 and results["detections_run"] >= 1
    assert results["generated"] + results["reused"] == results["frames_with_faces"] == 12
    assert report["config"]["output_video_quality"] == 80 and report["config"]["temp_frame_format"] is None
    # After the video every model is released, before the encoder's flush (the write stage).
    assert report["pool"]["resident"] == [] and report["stages"][-1]["resident"] == []
    assert "face_landmark" in report["pool"]["released"]
    assert report["config"]["video_memory_level"] == 3 and report["memory_plan"]["queue_frames"] == 4  # the profile's


def test_report_on_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, grace_hopper_path: Path) -> None:
    output, path = tmp_path / "out.jpg", tmp_path / "run.json"
    code = main(["swap", "-s", str(tmp_path / "absent.jpg"), "-t", str(grace_hopper_path), "-o", str(output),
                 "--report", str(path)])
    report = _report(path)
    assert code == 3 and not report["ok"] and report["error"]["exit_code"] == 3 and "absent.jpg" in report["error"]["message"]
    assert report["output"] is None and not output.exists()

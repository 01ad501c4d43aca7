"""`slimfuse optimize` and stored variants: gated, stored beside the original with a sidecar, listed, selected by
`--face-landmarker-model NAME.VARIANT` (and then actually loaded), refused when tampered with or failed."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
import pytest

import neural_models as nm
from slimfuse.cli.main import main
from slimfuse.models import pool as pool_module
from slimfuse.models.store import Store, sha256_file
from slimfuse.models.variants import read_record
from slimfuse.optimize import build


def _swap(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path, *options: str) -> tuple[int, Path]:
    output = tmp_path / "out.jpg"
    code = main(["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(output), "--quiet",
                 *options])
    return code, output


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the pool's sessions are made from, in order."""
    paths: list[Path] = []
    real = pool_module.create_session

    def spy(path: Path, *args: object, **kwargs: object) -> object:
        paths.append(Path(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pool_module, "create_session", spy)
    return paths


def test_fp16_variant_is_gated_stored_listed_and_used(home: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      loaded: list[Path], astronaut_path: Path,
                                                      grace_hopper_path: Path) -> None:
    report = tmp_path / "gate.json"
    assert main(["optimize", "face_landmark", "--fp16", "--json", str(report)]) == 0
    variant = home.model_dir / "face_landmark.fp16.onnx"
    assert capsys.readouterr().out.strip() == str(variant)
    document = json.loads(report.read_text())
    assert {key: document[key] for key in ("model", "variant", "metric", "threshold", "higher_is_better", "verdict")} \
        == {"model": "face_landmark", "variant": "fp16", "metric": "landmark_error_px", "threshold": 0.5,
            "higher_is_better": False, "verdict": "pass"}
    assert document["value"] < 0.1 and document["details"]["crop_px"] == 192 and document["stored"] is True
    record = read_record(variant)
    assert record is not None and record.sha256 == sha256_file(variant) == document["sha256"]
    assert record.original_sha256 == home.catalog.get("face_landmark").sha256 and record.verdict == "pass"

    assert main(["models", "list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "variant of face_landmark" in rows["face_landmark.fp16"] and "gate pass" in rows["face_landmark.fp16"]

    loaded.clear()  # the sessions the swap makes, not the optimiser's
    code, output = _swap(tmp_path, astronaut_path, grace_hopper_path, "--face-landmarker-model", "face_landmark.fp16")
    assert code == 0 and output.is_file()
    landmarkers = [path.name for path in loaded if path.name.startswith("face_landmark")]
    assert landmarkers == ["face_landmark.fp16.onnx"]


def test_tampered_variant_is_refused(home: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     astronaut_path: Path, grace_hopper_path: Path) -> None:
    assert main(["optimize", "face_landmark", "--fp16", "--gate"]) == 0
    variant = home.model_dir / "face_landmark.fp16.onnx"
    data = bytearray(variant.read_bytes())
    data[-100] ^= 0xFF
    variant.write_bytes(bytes(data))
    capsys.readouterr()
    code, output = _swap(tmp_path, astronaut_path, grace_hopper_path, "--face-landmarker-model", "face_landmark.fp16")
    assert code == 15 and not output.exists()
    assert "face_landmark.fp16" in capsys.readouterr().err
    assert main(["models", "verify"]) == 15


def test_broken_variant_fails_its_gate_and_is_not_stored(home: Store, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch, astronaut_path: Path,
                                                         grace_hopper_path: Path) -> None:
    made = build.make_variant

    def broken(shop: build.Workshop, target: build.OptimizeTarget, request: build.OptimizeRequest) -> tuple:
        data, how = made(shop, target, request)
        return nm.zeroed_conv(onnx.load_from_string(data), index=20).SerializeToString(), how

    monkeypatch.setattr(build, "make_variant", broken)
    report = tmp_path / "gate.json"
    assert main(["optimize", "face_landmark", "--fp16", "--json", str(report)]) == 19
    document = json.loads(report.read_text())
    assert document["verdict"] == "fail" and document["value"] > 0.5 and document["stored"] is False
    variant = home.model_dir / "face_landmark.fp16.onnx"
    assert not variant.exists() and "not stored" in capsys.readouterr().err

    assert main(["optimize", "face_landmark", "--fp16", "--gate", "--force"]) == 0  # stored, marked failed
    record = read_record(variant)
    assert variant.is_file() and record is not None and record.verdict == "fail"
    capsys.readouterr()
    code, output = _swap(tmp_path, astronaut_path, grace_hopper_path, "--face-landmarker-model", "face_landmark.fp16")
    assert code == 19 and not output.exists() and "failed its quality gate" in capsys.readouterr().err


def test_ungated_variant_is_gated_when_first_selected(home: Store, tmp_path: Path, loaded: list[Path],
                                                      astronaut_path: Path, grace_hopper_path: Path) -> None:
    assert main(["optimize", "face_detection_short_range", "--fp16"]) == 0
    variant = home.model_dir / "face_detection_short_range.fp16.onnx"
    record = read_record(variant)
    assert record is not None and record.verdict == "ungated" and record.gate is None
    loaded.clear()
    code, _ = _swap(tmp_path, astronaut_path, grace_hopper_path, "--face-detector-model", "short.fp16")
    assert code == 0
    record = read_record(variant)
    assert record is not None and record.verdict == "pass" and record.gate["metric"] == "box_iou"
    names = [path.name for path in loaded]
    assert "face_detection_short_range.fp16.onnx" in names and "face_detection_short_range.onnx" in names  # gate
    assert names.index("face_detection_short_range.fp16.onnx") > names.index("face_detection_short_range.onnx")


def test_a_file_path_gets_its_variant_beside_it(home: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "mesh.onnx"
    shutil.copyfile(home.path("face_landmark"), copy)
    assert main(["optimize", str(copy), "--int8", "--dynamic", "--gate"]) == 0  # its sha256 says face_landmark
    beside = tmp_path / "mesh.int8-dynamic.onnx"
    assert capsys.readouterr().out.strip() == str(beside)
    record = read_record(beside)
    assert record is not None and record.model == "face_landmark" and record.gate["metric"] == "landmark_error_px"
    unknown = tmp_path / "standin.onnx"
    onnx.save(nm.identity_enhancer("gfpgan_1.4"), str(unknown))
    assert main(["optimize", str(unknown), "--fp16", "--gate"]) == 2  # the catalog does not know it: --metric
    assert main(["optimize", str(unknown), "--fp16", "--gate", "--metric", "psnr_db"]) == 0
    record = read_record(tmp_path / "standin.fp16.onnx")
    assert record is not None and record.verdict == "pass" and record.gate["value"] > 40


def test_usage_errors(home: Store, tmp_path: Path) -> None:
    assert main(["optimize", "no_such_model", "--fp16"]) == 2
    assert main(["optimize", str(tmp_path / "missing.onnx"), "--fp16"]) == 3
    assert main(["optimize", "face_landmark", "--fp16", "--dynamic"]) == 2
    assert main(["optimize", "face_landmark", "--int8", "--keep-fp32", "Conv"]) == 2
    assert main(["optimize", "dlib_shape_predictor_5", "--fp16"]) == 2
    assert main(["optimize", "face_landmark", "--fp16", "--gate", "--metric", "box_iou"]) == 2
    assert main(["optimize", "face_landmark", "--fp16", "--json", str(tmp_path / "no" / "gate.json")]) == 11

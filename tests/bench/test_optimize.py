"""`slimfuse bench optimize --calibration`: the stand-ins it builds of the large models slimfuse.bench.standins has
none of, its options, and the harness end to end on small stand-ins (each calibrator in a fresh process, giving the
same int8 variant)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import neural_models as nm
from slimfuse.bench import optimize
from slimfuse.cli.main import main
from slimfuse.models.runtime import SessionSettings, create_session
from slimfuse.models.store import Store
from slimfuse.models.validate import check_file

SMALL = 1 / 16


@pytest.mark.parametrize("name", ["gpen_bfr_256", "gpen_bfr_512", "gpen_bfr_1024", "real_esrgan_x4"])
def test_standin_has_the_catalog_tensors_and_a_bounded_output(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.onnx"
    optimize._build_standin(name, path, SMALL)
    onnx.checker.check_model(str(path), full_check=True)
    spec = nm.spec_of(name)
    assert check_file(spec, path) is None
    assert spec.io is not None
    frame = spec.kind == "frame_enhancer"
    size = 24 if frame else spec.io.crop_size
    low, high = (0.0, 1.0) if frame else spec.io.output_range
    image = np.random.default_rng(0).uniform(low, high, (2, 3, size, size)).astype(np.float32)  # the batch is free
    output = create_session(path, SessionSettings()).run(None, {"input": image})[0]
    scale = 4 if frame else 1
    assert output.shape == (2, 3, size * scale, size * scale)
    assert np.all(np.isfinite(output)) and output.min() >= low and output.max() <= high


def test_real_esrgan_standin_has_rrdbnets_parameters() -> None:
    """RRDBNet with 64 features, 23 blocks and growth 32: 16.7 M parameters (the 67 MB file)."""
    assert abs(optimize.real_esrgan_x4()[0].parameters() / 1e6 - 16.7) < 0.1


def test_calibration_options_are_checked() -> None:
    assert main(["bench", "optimize", "--models", "gfpgan_1.4", "--quiet"]) == 2
    assert main(["bench", "optimize", "--calibration", "--models", "face_landmark", "--quiet"]) == 2


@pytest.mark.slow  # two fresh processes, each finding the calibration faces
def test_both_calibrators_make_the_same_variant_each_in_a_fresh_process(store: Store) -> None:
    rows = optimize.measure_calibration(store, ("gpen_bfr_256",), optimize.CALIBRATORS, width=SMALL)
    assert [row.calibrator for row in rows] == list(optimize.CALIBRATORS)
    assert all(row.exit_code == 0 and row.samples and row.samples >= 14 and row.peak_rss_mb > 100 for row in rows)
    assert rows[0].sha256 is not None and rows[0].sha256 == rows[1].sha256
    table = optimize.calibration_table(rows)
    assert "slimfuse (run by run)" in table and "onnxruntime's calibrator" in table

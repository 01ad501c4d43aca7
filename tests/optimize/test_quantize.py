"""int8 variants with ONNX Runtime's quantisation tools: static QDQ calibrated on real face crops (the packaged
photos, augmented), dynamic, and ONNX Runtime's offline-optimised graph."""
from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort

from slimfuse.models.spec import LANDMARK_ERROR
from slimfuse.models.store import Store
from slimfuse.optimize.build import OptimizeRequest, Workshop, gate_bytes, make_variant, resolve
from slimfuse.optimize.calibration import AUGMENTS, images
from slimfuse.optimize.quantize import FeedReader, output_heads


def test_calibration_and_gate_sets_are_real_and_disjoint(workshop: Workshop) -> None:
    assert not set(AUGMENTS["gate"]) & set(AUGMENTS["calibrate"])
    gate = {label for label, _ in images("gate")}
    calibrate = {label for label, _ in images("calibrate")}
    assert len(gate) == 18 and len(calibrate) == 16 and not gate & calibrate
    context = workshop.context("calibrate")
    assert sum(item.face is not None for item in context.images) >= 14  # the original models find the faces


def test_int8_static_is_calibrated_on_face_crops_and_passes(store: Store, workshop: Workshop) -> None:
    target = resolve(store, "face_landmark", OptimizeRequest("int8"))
    feeds = workshop.subject(target, LANDMARK_ERROR, "calibrate").feeds()
    original = ort.InferenceSession(str(target.path), providers=["CPUExecutionProvider"])
    for feed in feeds:  # real faces: FaceMesh crops the original model sees a face in
        assert feed["input_1"].shape == (1, 192, 192, 3) and 0.0 <= feed["input_1"].min() <= feed["input_1"].max() <= 1.0
        assert original.run(None, feed)[1].reshape(-1)[0] > 0.0
    reader = FeedReader(feeds)
    assert [reader.get_next() is not None for _ in range(len(feeds) + 1)] == [True] * len(feeds) + [False]
    data, how = make_variant(workshop, target, OptimizeRequest("int8"))
    model = onnx.load(io.BytesIO(data))
    ops = {node.op_type for node in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    assert how["calibration_samples"] == len(feeds) and how["per_channel"] is True
    assert sorted(how["int8_weights_only"]) == sorted(output_heads(onnx.load(str(target.path))))  # weights only
    assert len(data) < 0.4 * target.path.stat().st_size
    result = gate_bytes(workshop, target, "int8", data, target.gate)  # type: ignore[arg-type]
    assert result.passed and 0.05 < result.value < 0.5


def test_int8_dynamic_and_ort_optimized(store: Store, workshop: Workshop) -> None:
    target = resolve(store, "face_landmark", OptimizeRequest("int8-dynamic"))
    assert target.gate is not None
    dynamic, how = make_variant(workshop, target, OptimizeRequest("int8-dynamic"))
    assert how["technique"] == "int8 dynamic"
    assert gate_bytes(workshop, target, "int8-dynamic", dynamic, target.gate).passed
    optimized, how = make_variant(workshop, target, OptimizeRequest("optimized", ort_level="extended"))
    assert how["level"] == "extended"
    result = gate_bytes(workshop, target, "optimized", optimized, target.gate)
    assert result.value < 1e-3 and result.passed
    assert np.isfinite(result.details["max_px"])

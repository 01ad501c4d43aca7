"""The quality gate: its verdict follows its measured value and threshold, its metrics are right on cases worked by
hand, and it judges swappers, enhancers and recognizers (stand-in models with the catalog's tensors) by PSNR, SSIM,
identity distance and cosine similarity."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
import pytest

import neural_models as nm
from slimfuse.models.spec import BOX_IOU, COSINE, LANDMARK_ERROR, PIXEL_AGREEMENT, PSNR, GateSpec
from slimfuse.models.store import Store
from slimfuse.models.variants import FAIL, PASS
from slimfuse.optimize.build import OptimizeRequest, Workshop, gate_file, optimize, resolve
from slimfuse.optimize.gate import GateResult
from slimfuse.optimize.metrics import box_agreement, cosine_similarities, landmark_errors, psnr, ssim


def _result(value: float, threshold: float, higher_is_better: bool) -> GateResult:
    metric = COSINE if higher_is_better else LANDMARK_ERROR
    return GateResult("face_landmark", "fp16", metric, value, threshold, higher_is_better, {"samples": 3})


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_verdict_follows_value_and_threshold(higher_is_better: bool) -> None:
    rng = np.random.default_rng(1)
    threshold = 0.5
    values = [threshold, threshold + 1e-9, threshold - 1e-9, 0.0, 1.0, math.inf, -math.inf, math.nan,
              *rng.uniform(0.0, 1.0, 200)]
    for value in values:
        result = _result(float(value), threshold, higher_is_better)
        better = value >= threshold if higher_is_better else value <= threshold  # False for NaN
        assert result.verdict == (PASS if better else FAIL), value
        assert result.passed == better
        document = result.to_dict()
        assert document["verdict"] == result.verdict and document["threshold"] == threshold
        assert document["higher_is_better"] is higher_is_better
        json.dumps(document, allow_nan=False)  # NaN and inf are written as null


def test_gate_spec_passes_matches_the_result() -> None:
    for spec in (GateSpec(PSNR, 35.0, True), GateSpec(LANDMARK_ERROR, 0.5, False)):
        for value in (0.1, 0.5, 0.9, 35.0, 40.0, math.nan):
            result = GateResult("m", "fp16", spec.metric, value, spec.threshold, spec.higher_is_better)
            assert result.passed == spec.passes(value)


def test_metrics_on_worked_cases() -> None:
    grey = np.full((32, 32, 3), 0.5)
    assert psnr(grey, grey) == 100.0
    assert psnr(grey, grey + 0.1) == pytest.approx(20.0)  # mse 0.01 at peak 1
    assert psnr(grey, np.full_like(grey, np.nan)) == 0.0
    assert ssim(grey, grey) == pytest.approx(1.0)
    noise = np.random.default_rng(0).uniform(0, 1, grey.shape)
    assert ssim(noise, noise) == pytest.approx(1.0) and ssim(noise, np.roll(noise, 3, axis=0)) < 0.2
    assert landmark_errors(np.array([[0.0, 0.0, 5.0]]), np.array([[3.0, 4.0, -9.0]])).tolist() == [5.0]  # z ignored
    assert cosine_similarities(np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([[2.0, 0.0], [-1.0, -1.0]])).tolist() \
        == pytest.approx([1.0, -1.0])


def test_box_agreement_counts_misses_and_extras() -> None:
    box = np.array([[0.0, 0.0, 10.0, 10.0]])
    same = box_agreement([box, box], [box, box])
    assert (same.iou, same.recall, same.precision) == (1.0, 1.0, 1.0)
    half = box_agreement([box], [np.array([[0.0, 0.0, 10.0, 5.0]])])
    assert half.iou == pytest.approx(0.5) and half.recall == 1.0
    missed = box_agreement([box, box], [box, np.zeros((0, 4))])
    assert missed.recall == 0.5 and missed.iou == pytest.approx(0.5)
    extra = box_agreement([box], [np.vstack([box, box + 50])])
    assert extra.precision == 0.5 and extra.iou == pytest.approx(0.5) and extra.recall == 1.0


@pytest.fixture(scope="module")
def neural(tmp_path_factory: pytest.TempPathFactory, store: Store) -> tuple[Store, Workshop]:
    """A store holding stand-ins for every swapper, enhancer, converter and the ArcFace recognizer."""
    root = tmp_path_factory.mktemp("gate_neural")
    neural_store = nm.isolated_store(root / "home", store, nm.place_standins(root / "placed"))
    return neural_store, Workshop(neural_store)


@pytest.mark.parametrize("model", ["gfpgan_1.4", "codeformer", "inswapper_128", "arcface_w600k_r50",
                                   "crossface_simswap"])
def test_fp16_of_neural_stand_ins_passes_its_gate(neural: tuple[Store, Workshop], model: str) -> None:
    neural_store, shop = neural
    outcome = optimize(neural_store, model, OptimizeRequest("fp16", gate=True), workshop=shop)
    result = outcome.gate
    assert result is not None and result.passed and outcome.stored
    if result.metric == PSNR:
        assert result.value > 40.0 and result.details["ssim"] > 0.99
        assert result.details["recognizer"] == "arcface_w600k_r50" and result.details["identity_distance"] < 0.01
    else:
        assert result.metric == COSINE and result.value > 0.999
    assert outcome.path.is_file() and outcome.record.verdict == PASS


def test_a_swapper_that_changes_the_face_fails(neural: tuple[Store, Workshop], tmp_path: Path) -> None:
    neural_store, shop = neural
    target = resolve(neural_store, "hyperswap_1a_256", OptimizeRequest("fp16"))
    assert target.gate is not None and target.gate.metric == PSNR
    subject = shop.subject(target, PSNR, "gate")
    good = tmp_path / "same.onnx"
    onnx.save(nm.identity_swapper("hyperswap_1a_256"), str(good))
    bad = tmp_path / "inverted.onnx"
    onnx.save(nm.identity_swapper("hyperswap_1a_256", invert=True), str(bad))
    same = gate_file(target, "fp16", good, target.gate, subject)
    assert same.value == 100.0 and same.details["identity_distance"] == pytest.approx(0.0, abs=1e-6) and same.passed
    inverted = gate_file(target, "fp16", bad, target.gate, subject)
    assert inverted.value < 15.0 and inverted.details["ssim"] < same.details["ssim"]
    assert inverted.details["identity_distance"] > 0.1 and inverted.verdict == FAIL


def test_detector_gate_uses_the_project_decoding(store: Store, workshop: Workshop, tmp_path: Path) -> None:
    target = resolve(store, "face_detection_short_range", OptimizeRequest("fp16"))
    assert target.gate is not None and target.gate.metric == BOX_IOU
    subject = workshop.subject(target, BOX_IOU, "gate")
    same = gate_file(target, "optimized", target.path, target.gate, subject)
    assert same.value == 1.0 and same.details["recall"] == 1.0 and same.details["original_faces"] >= 16
    broken = tmp_path / "broken.onnx"
    onnx.save(nm.zeroed_conv(onnx.load(str(target.path)), index=3), str(broken))
    found = gate_file(target, "fp16", broken, target.gate, subject)
    assert found.verdict == FAIL and found.value < 0.5
    assert found.details["recall"] < 0.5 or found.details["precision"] < 0.5


def test_a_face_parser_is_gated_on_the_classes_its_masks_come_from(store: Store, tmp_path: Path) -> None:
    placed = tmp_path / "placed"
    nm.save(nm.face_parser(), placed, "bisenet_resnet_34")
    parser_store = nm.isolated_store(tmp_path / "home", store, placed)
    shop = Workshop(parser_store)
    target = resolve(parser_store, "bisenet_resnet_34", OptimizeRequest("fp16"))
    assert target.gate is not None and target.gate.metric == PIXEL_AGREEMENT and target.gate.threshold == 0.98
    subject = shop.subject(target, PIXEL_AGREEMENT, "gate")
    same = tmp_path / "same.onnx"
    onnx.save(nm.face_parser(), str(same))
    kept = gate_file(target, "fp16", same, target.gate, subject)
    assert kept.value == 1.0 and kept.passed and kept.details["samples"] >= 4
    shifted = nm.face_parser()  # reads class = red / 20 instead of red / 10: most pixels change class
    for init in shifted.graph.initializer:
        if init.name == "to_class":
            init.CopyFrom(numpy_helper.from_array(np.array(12.75, np.float32), "to_class"))
    bad = tmp_path / "shifted.onnx"
    onnx.save(shifted, str(bad))
    failed = gate_file(target, "fp16", bad, target.gate, subject)
    assert failed.value < 0.5 and failed.verdict == FAIL and failed.details["agreement_min"] <= failed.value
    # The stand-in's classes come from a continuous value, so float16 rounding flips the pixels next to every class
    # boundary: a few percent, under the threshold; the verdict follows the value.
    outcome = optimize(parser_store, "bisenet_resnet_34", OptimizeRequest("fp16", gate=True, force=True), workshop=shop)
    assert outcome.gate is not None and 0.9 < outcome.gate.value < 1.0
    assert outcome.gate.passed == (outcome.gate.value >= 0.98)

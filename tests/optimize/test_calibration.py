"""Static quantisation's activation ranges, computed one run at a time: the very ranges onnxruntime's own MinMax
calibrator computes, hence the very same int8 model; reductions placed right after the tensors they reduce."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import neural_models as nm
from slimfuse.optimize.calibration import activation_ranges, add_reductions, calibrated_tensors
from slimfuse.optimize.quantize import FeedReader, quantize_static_model

FLOAT = TensorProto.FLOAT
CHANNELS = 8


def small_model() -> onnx.ModelProto:
    """Conv, LeakyRelu, a second branch through Resize, their sum, a Sigmoid head: quantisable and other nodes,
    a tensor read twice, a graph output that feeds another node."""
    rng = np.random.default_rng(7)

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.normal(0.0, 0.3, shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("LeakyRelu", ["c1"], ["a1"], alpha=0.2, name="act1"),
        helper.make_node("Conv", ["a1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2], name="conv2"),
        helper.make_node("Resize", ["c2", "", "scales"], ["up"], mode="linear", name="up"),
        helper.make_node("Add", ["a1", "up"], ["features"], name="sum"),
        helper.make_node("Conv", ["features", "w3"], ["logits"], name="head"),
        helper.make_node("Sigmoid", ["logits"], ["mask"], name="squash"),
    ]
    initializers = [weight("w1", (CHANNELS, 3, 3, 3)), weight("b1", (CHANNELS,)), weight("w2", (CHANNELS, CHANNELS, 3, 3)),
                    weight("w3", (1, CHANNELS, 1, 1)), numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    return nm.graph_model("calibration", nodes, [helper.make_tensor_value_info("image", FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("logits", FLOAT, [1, 1, 16, 16]),
                           helper.make_tensor_value_info("mask", FLOAT, [1, 1, 16, 16])], initializers)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calibration") / "small.onnx"
    onnx.save(small_model(), str(path))
    return path


@pytest.fixture(scope="module")
def feeds() -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(3)
    return [{"image": rng.normal(0.0, scale, (1, 3, 16, 16)).astype(np.float32)} for scale in (0.5, 1.0, 2.0, 0.25)]


def _onnxruntime_ranges(path: Path, feeds: list[dict[str, np.ndarray]], work: Path) -> dict[str, tuple]:
    """The ranges of onnxruntime's own calibrator, made as quantize_static makes it."""
    from onnxruntime.quantization import CalibrationMethod, create_calibrator
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    calibrator = create_calibrator(path, list(set(QLinearOpsRegistry) | set(QDQRegistry)),
                                   augmented_model_path=str(work / "augmented.onnx"),
                                   calibrate_method=CalibrationMethod.MinMax)
    calibrator.collect_data(FeedReader(feeds))
    return {name: data.range_value for name, data in calibrator.compute_data().items()}


def test_ranges_are_onnxruntime_calibrators(model_path: Path, feeds: list[dict[str, np.ndarray]],
                                            tmp_path: Path) -> None:
    ours = {name: data.range_value for name, data in activation_ranges(model_path, feeds).items()}
    reference = _onnxruntime_ranges(model_path, feeds, tmp_path)
    assert set(ours) == set(reference) and {"image", "c1", "a1", "features", "logits"} <= set(ours)
    for name, (low, high) in reference.items():
        assert ours[name][0].dtype == low.dtype and ours[name][0].shape == low.shape == (1,)
        np.testing.assert_array_equal(ours[name][0], low)
        np.testing.assert_array_equal(ours[name][1], high)
    assert ours["a1"][0] < 0 < ours["a1"][1] and ours["image"][1] > 4.0  # the widest feed counts


def test_streamed_calibration_makes_the_same_int8_model(model_path: Path, feeds: list[dict[str, np.ndarray]],
                                                        tmp_path: Path) -> None:
    made = {}
    for calibrator in ("streamed", "onnxruntime"):
        destination = tmp_path / f"{calibrator}.onnx"
        how = quantize_static_model(model_path, destination, feeds, calibrator=calibrator)
        assert how["calibrator"] == calibrator and how["calibration_samples"] == len(feeds)
        made[calibrator] = onnx.load(str(destination)).SerializeToString(deterministic=True)
    assert made["streamed"] == made["onnxruntime"]
    quantised = onnx.load(str(tmp_path / "streamed.onnx"))
    assert sum(node.op_type == "QuantizeLinear" for node in quantised.graph.node) >= 3


def test_each_reduction_follows_the_node_that_makes_its_tensor() -> None:
    """What keeps a calibration run as small as a plain one: each tensor is reduced before any other node runs (in
    graph order, as the calibration session executes), and only the reductions' (1-element) results are added as
    outputs."""
    model = small_model()
    tensors = calibrated_tensors(model)
    outputs = add_reductions(model, tensors)
    assert len(outputs) == 2 * len(tensors) == len(set(outputs))
    assert [output.name for output in model.graph.output] == ["logits", "mask", *outputs]
    nodes = list(model.graph.node)
    made_at = {name: index for index, node in enumerate(nodes) for name in node.output}
    for index, node in enumerate(nodes):
        if node.op_type not in ("ReduceMin", "ReduceMax"):
            continue
        (tensor,) = node.input
        before = made_at.get(tensor, -1)  # -1: a graph input, reduced before the first node
        assert all(other.op_type in ("ReduceMin", "ReduceMax") for other in nodes[before + 1:index]), node.name


def test_no_feeds_is_refused(model_path: Path) -> None:
    with pytest.raises(ValueError, match="calibration inputs"):
        activation_ranges(model_path, [])

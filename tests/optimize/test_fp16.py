"""The float16 conversion: sensitive operations stay float32 so nothing overflows, I/O stays float32, kept nodes
get Casts around them, and the output bytes are deterministic.

A float16 graph's numbers are evaluated twice: by ONNX's reference evaluator, which computes every float16 tensor
in float16 as a GPU's float16 kernels do, and by ONNX Runtime's CPU provider (which runs the operations it lacks
float16 kernels for in float32, so it hides overflows a GPU would show)."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import neural_models as nm
from slimfuse.models.store import Store
from slimfuse.optimize.fp16 import Float16Error, convert_float16, tensor_ranges

FLOAT = TensorProto.FLOAT
OUTPUTS = {"total": [1, 64, 1], "lse": [1, 64, 1], "soft": [1, 64, 256], "ln": [1, 64, 256], "inorm": [1, 64, 256],
           "rms": [1, 64, 1], "mixed": [1, 64, 256]}


def _const(name: str, value: object) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def sensitive_model() -> onnx.ModelProto:
    """Activations about 300 (fine in float16) through operations whose sums, squares and exponentials are not."""
    nodes = [
        helper.make_node("ReduceSum", ["x", "axes"], ["total"], keepdims=1, name="sum_all"),  # 256 x 300: 76800
        helper.make_node("Mul", ["x", "small"], ["scaled"], name="scale"),
        helper.make_node("Exp", ["scaled"], ["exps"]),  # exp(15): 3.3e6
        helper.make_node("ReduceSum", ["exps", "axes"], ["expsum"], keepdims=1),
        helper.make_node("Log", ["expsum"], ["lse"]),
        helper.make_node("Softmax", ["scaled"], ["soft"], axis=-1),
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("InstanceNormalization", ["x", "gamma64", "beta64"], ["inorm"], epsilon=1e-5),
        helper.make_node("Pow", ["x", "two"], ["squares"]),  # 90000
        helper.make_node("ReduceMean", ["squares"], ["mean_square"], axes=[2], keepdims=1),
        helper.make_node("Sqrt", ["mean_square"], ["rms"], name="root"),
        helper.make_node("Mul", ["ln", "gamma"], ["mixed"], name="shared_weight"),  # gamma: read by both precisions
    ]
    initializers = [numpy_helper.from_array(np.array([2], dtype=np.int64), "axes"), _const("small", 0.05),
                    _const("gamma", np.linspace(0.5, 1.5, 256)), _const("beta", np.zeros(256)),
                    _const("gamma64", np.ones(64)), _const("beta64", np.zeros(64)), _const("two", 2.0)]
    return nm.graph_model("sensitive", nodes, [helper.make_tensor_value_info("x", FLOAT, [1, 64, 256])],
                          [helper.make_tensor_value_info(name, FLOAT, shape) for name, shape in OUTPUTS.items()],
                          initializers)


@pytest.fixture(scope="module")
def activations() -> np.ndarray:
    return np.random.default_rng(0).normal(300.0, 100.0, (1, 64, 256)).astype(np.float32)


def _reference(model: onnx.ModelProto, x: np.ndarray) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns about the overflows the test is looking for
        return dict(zip(OUTPUTS, ReferenceEvaluator(model).run(None, {"x": x}), strict=True))


def _onnxruntime(model: onnx.ModelProto, x: np.ndarray) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip(OUTPUTS, session.run(None, {"x": x}), strict=True))


def _close(expected: np.ndarray, found: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(found)) and np.allclose(found, expected, rtol=2e-2, atol=2e-3))


def test_naive_conversion_overflows_where_ours_does_not(activations: np.ndarray) -> None:
    model = sensitive_model()
    float32 = _onnxruntime(model, activations)
    naive, _ = convert_float16(model, sensitive=())  # every node in float16, nothing kept
    ours, report = convert_float16(model, ranges=tensor_ranges(model, [{"x": activations}]))
    naive_out, ours_out = _reference(naive, activations), _reference(ours, activations)
    broken = [name for name in OUTPUTS if not np.all(np.isfinite(naive_out[name]))]
    assert {"total", "lse", "ln", "rms"} <= set(broken)  # inf or NaN
    assert not _close(float32["inorm"], naive_out["inorm"])  # wrong without overflowing its output
    for name in OUTPUTS:
        assert _close(float32[name], ours_out[name]), name
    on_cpu = _onnxruntime(ours, activations)
    for name in OUTPUTS:
        assert _close(float32[name], on_cpu[name]), name
    assert dict(report.kept_by_reason) == {"sensitive": 9, "range": 1}  # Sqrt of 90000 is kept by the range check


def test_without_ranges_only_sensitive_ops_are_kept(activations: np.ndarray) -> None:
    model = sensitive_model()
    converted, report = convert_float16(model)
    out = _reference(converted, activations)
    assert not np.all(np.isfinite(out["rms"]))  # Sqrt reads ReduceMean's 90000 in float16: why ranges exist
    assert np.all(np.isfinite(out["total"])) and np.all(np.isfinite(out["ln"]))
    assert dict(report.kept_by_reason) == {"sensitive": 9}


def test_io_float32_and_initializers_follow_their_readers() -> None:
    converted, _ = convert_float16(sensitive_model())
    assert [value.type.tensor_type.elem_type for value in converted.graph.input] == [FLOAT]
    assert {value.type.tensor_type.elem_type for value in converted.graph.output} == {FLOAT}
    types = {init.name: init.data_type for init in converted.graph.initializer}
    assert types["beta"] == types["gamma64"] == types["two"] == FLOAT  # read only by kept nodes
    assert types["small"] == TensorProto.FLOAT16  # read only by the float16 Mul
    assert types["gamma"] == FLOAT and types["gamma_fp16"] == TensorProto.FLOAT16  # read by both
    casts = [node for node in converted.graph.node if node.op_type == "Cast"]
    assert casts and all(node.name for node in casts)
    onnx.checker.check_model(converted, full_check=True)


def test_keep_fp32_by_op_type_and_node_name(activations: np.ndarray) -> None:
    model = sensitive_model()
    by_type, report_type = convert_float16(model, keep=["Mul"])
    by_name, report_name = convert_float16(model, keep=["scale"])
    assert dict(report_type.kept_by_reason)["listed"] == 2
    assert dict(report_name.kept_by_reason)["listed"] == 1
    types = {init.name: init.data_type for init in by_type.graph.initializer}
    assert types["small"] == FLOAT and "gamma_fp16" not in types
    float32 = _onnxruntime(model, activations)
    assert _close(float32["soft"], _reference(by_name, activations)["soft"])


def test_output_is_deterministic(store: Store) -> None:
    model = onnx.load(str(store.path("face_landmark")))
    first, _ = convert_float16(model)
    second, _ = convert_float16(onnx.load(str(store.path("face_landmark"))))
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(deterministic=True)
    assert len(first.SerializeToString()) < 0.55 * store.path("face_landmark").stat().st_size


def test_control_flow_is_refused() -> None:
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "branch", [],
                               [helper.make_tensor_value_info("y", FLOAT, [1])])
    condition = numpy_helper.from_array(np.array(True), "condition")
    model = nm.graph_model("control", [helper.make_node("If", ["condition"], ["out"], then_branch=branch,
                                                        else_branch=branch)],
                           [helper.make_tensor_value_info("x", FLOAT, [1])],
                           [helper.make_tensor_value_info("out", FLOAT, [1])], [condition])
    with pytest.raises(Float16Error):
        convert_float16(model)

"""Parity of our TFLite → ONNX converter with the tflite runtime, on real face crops from the packaged photos."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import flatbuffers
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PIL import Image
from tflite.BuiltinOperator import BuiltinOperator as Op
from tflite.BuiltinOptions import BuiltinOptions
from tflite.TensorType import TensorType

from slimfuse.models.store import Store
from slimfuse.models.tflite_import import UnsupportedTfliteError, convert_file, tflite_to_onnx

from ai_edge_litert import interpreter as litert  # test-only dependency: the reference runtime

if TYPE_CHECKING:
    from ai_edge_litert.interpreter import Interpreter

TOLERANCE = 1e-3


# --- the real models and real inputs ----------------------------------------------------------------

Box = tuple[int, int, int, int]  # left, top, right, bottom in photo pixels

# Hand-placed squares on the packaged photos: the face with room around it (detectors), the face alone
# (face mesh, about MediaPipe's 1.5x face box), and each eye (iris model).
CROPS: dict[str, dict[str, Any]] = {
    "grace_hopper": {"detect": (95, 75, 435, 415), "face": (140, 110, 390, 360),
                     "eyes": [(188, 158, 262, 232), (270, 153, 344, 227)]},
    "astronaut": {"detect": (100, 10, 350, 260), "face": (150, 45, 300, 195),
                  "eyes": [(182, 88, 230, 136), (222, 88, 270, 136)]},
}
# (mirror, degrees): MediaPipe feeds mirrored right eyes and rotated faces, so the models see these too.
AUGMENTATIONS = [(False, 0.0), (True, 0.0), (False, 10.0), (True, -8.0)]


@dataclass(frozen=True)
class ModelCase:
    crop: str
    scale: Callable[[np.ndarray], np.ndarray]
    outputs: dict[str, tuple[int, ...]]
    max_transposes: int
    sees_face: Callable[[dict[str, np.ndarray]], bool]  # does the output say the crop is what the model expects?


def _logit_positive(name: str) -> Callable[[dict[str, np.ndarray]], bool]:
    return lambda outputs: float(outputs[name].max()) > 0.0


def _iris_centred(outputs: dict[str, np.ndarray]) -> bool:
    centre = outputs["output_iris"].reshape(5, 3)[0, :2]  # iris centre (x, y) in the 64x64 crop
    return bool(((centre > 16) & (centre < 48)).all())


def _to_signed_unit(pixels: np.ndarray) -> np.ndarray:
    return pixels.astype(np.float32) / 127.5 - 1.0


def _to_unit(pixels: np.ndarray) -> np.ndarray:
    return pixels.astype(np.float32) / 255.0


CASES = {
    "face_detection_short_range": ModelCase(
        "detect", _to_signed_unit,
        {"regressors": (1, 896, 16), "classificators": (1, 896, 1)}, max_transposes=5,
        sees_face=_logit_positive("classificators")),
    "face_detection_full_range": ModelCase(
        "detect", _to_signed_unit,
        {"Identity": (1, 2304, 16), "Identity_1": (1, 2304, 1)}, max_transposes=2,
        sees_face=_logit_positive("Identity_1")),
    "face_landmark": ModelCase(
        "face", _to_unit,
        {"conv2d_21": (1, 1, 1, 1404), "conv2d_31": (1, 1, 1, 1)}, max_transposes=1,
        sees_face=_logit_positive("conv2d_31")),
    "iris_landmark": ModelCase(
        "eyes", _to_unit,
        {"output_eyes_contours_and_brows": (1, 213), "output_iris": (1, 15)}, max_transposes=1,
        sees_face=_iris_centred),
}


def _crop(photo: np.ndarray, box: Box, size: int, mirror: bool, degrees: float) -> np.ndarray:
    """The box resized to size×size; rotation turns the photo about the box centre so no corner goes black."""
    image = Image.fromarray(photo)
    if degrees:
        centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        image = image.rotate(degrees, resample=Image.Resampling.BILINEAR, center=centre)
    pixels = np.asarray(image.crop(box).resize((size, size), Image.Resampling.BILINEAR))
    return pixels[:, ::-1] if mirror else pixels


def _inputs(case: ModelCase, photos: dict[str, np.ndarray], size: int) -> Iterator[tuple[str, np.ndarray]]:
    for photo_name, photo in photos.items():
        boxes = CROPS[photo_name][case.crop]
        for box_no, box in enumerate(boxes if isinstance(boxes, list) else [boxes]):
            for mirror, degrees in AUGMENTATIONS:
                pixels = _crop(photo, box, size, mirror, degrees)
                label = f"{photo_name}[{box_no}] mirror={mirror} rot={degrees}"
                yield label, case.scale(pixels)[None]


@dataclass
class Converted:
    case: ModelCase
    data: bytes
    model: onnx.ModelProto
    onnx_bytes: bytes
    session: ort.InferenceSession = field(repr=False)


@pytest.fixture(scope="module", params=sorted(CASES))
def converted(request: pytest.FixtureRequest, store: Store) -> Converted:
    """Each real .tflite file, as the model store fetched it from the pinned mediapipe wheel."""
    case = CASES[request.param]
    data = store.source_path(request.param).read_bytes()
    model = tflite_to_onnx(data, graph_name=request.param)
    onnx_bytes = model.SerializeToString(deterministic=True)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(onnx_bytes, options, providers=["CPUExecutionProvider"])
    return Converted(case, data, model, onnx_bytes, session)


@pytest.fixture(scope="module")
def photos(grace_hopper: np.ndarray, astronaut: np.ndarray) -> dict[str, np.ndarray]:
    return {"grace_hopper": grace_hopper, "astronaut": astronaut}


def _interpreter(data: bytes) -> Interpreter:
    """tflite's own kernels, without the XNNPACK delegate: the reference semantics of every op.

    XNNPACK lands within the same 1e-3 on these models (it differs from the builtin kernels by up to 7e-4 on
    logits of magnitude ~300), but it also silently accepts things the builtin kernels reject.
    """
    interpreter = litert.Interpreter(model_content=data, num_threads=1,
                                     experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    return interpreter


def _tflite_run(interpreter: Interpreter, x: np.ndarray) -> dict[str, np.ndarray]:
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()}


def _onnx_run(session: ort.InferenceSession, x: np.ndarray) -> dict[str, np.ndarray]:
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {session.get_inputs()[0].name: x}), strict=True))


def test_interface_matches_tflite(converted: Converted) -> None:
    interpreter = _interpreter(converted.data)
    (tfl_input,) = interpreter.get_input_details()
    (onnx_input,) = converted.session.get_inputs()
    assert onnx_input.name == tfl_input["name"]
    assert tuple(onnx_input.shape) == tuple(tfl_input["shape"])  # NHWC, as tflite
    outputs = {o.name: tuple(o.shape) for o in converted.session.get_outputs()}
    assert outputs == converted.case.outputs
    assert outputs == {d["name"]: tuple(d["shape"]) for d in interpreter.get_output_details()}
    assert converted.model.opset_import[0].version == 17
    onnx.checker.check_model(converted.model, full_check=True)


def test_few_transposes(converted: Converted) -> None:
    transposes = sum(node.op_type == "Transpose" for node in converted.model.graph.node)
    assert transposes <= converted.case.max_transposes


def test_parity_on_real_faces(converted: Converted, photos: dict[str, np.ndarray]) -> None:
    interpreter = _interpreter(converted.data)
    size = int(converted.session.get_inputs()[0].shape[1])
    worst: dict[str, float] = {}
    count = 0
    for label, x in _inputs(converted.case, photos, size):
        expected = _tflite_run(interpreter, x)
        got = _onnx_run(converted.session, x)
        for name, want in expected.items():
            diff = float(np.abs(got[name] - want).max())
            worst[name] = max(worst.get(name, 0.0), diff)
            assert diff <= TOLERANCE, f"{label}: {name} differs by {diff}"
        count += 1
    assert count >= 8
    print(f"\n{converted.model.graph.name}: max abs diff over {count} crops: {worst}")


def test_models_see_faces(converted: Converted, photos: dict[str, np.ndarray]) -> None:
    """The crops are real faces (and eyes) to these models, so parity was measured on meaningful activations."""
    size = int(converted.session.get_inputs()[0].shape[1])
    for label, x in _inputs(converted.case, photos, size):
        outputs = _onnx_run(converted.session, x)
        assert converted.case.sees_face(outputs), f"{label}: the model does not see a face/eye here"


def test_conversion_is_deterministic(converted: Converted, tmp_path: Path) -> None:
    again = tflite_to_onnx(converted.data, graph_name=converted.model.graph.name)
    assert again.SerializeToString(deterministic=True) == converted.onnx_bytes
    src = tmp_path / f"{converted.model.graph.name}.tflite"
    src.write_bytes(converted.data)
    first, second = tmp_path / "a.onnx", tmp_path / "b.onnx"
    convert_file(src, first)
    convert_file(src, second)
    assert first.read_bytes() == second.read_bytes()
    assert onnx.load_from_string(first.read_bytes()).graph.name == src.stem


# --- tiny hand-built tflite models: options the four models do not use, and refusals ---------------


@dataclass(frozen=True)
class TensorSpec:
    """A tensor of a hand-built model; `data` makes it a constant."""

    name: str
    shape: tuple[int, ...]
    data: np.ndarray | None = None
    type: int = TensorType.FLOAT32
    sparsity: dict[str, Any] | None = None


@dataclass(frozen=True)
class OpSpec:
    """An operator: builtin code, tensor indices and (options table name, union type, fields)."""

    code: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: tuple[str, int, dict[str, Any]] | None = None
    custom: tuple[str, bytes] | None = None
    """A custom op: its name and its raw options (`code` is then Op.CUSTOM)."""


def _table(b: flatbuffers.Builder, table: str, **fields: int) -> int:
    module = importlib.import_module(f"tflite.{table}")  # `tflite.X` is the class, its module has the builders
    getattr(module, f"{table}Start")(b)
    for name, value in fields.items():
        getattr(module, f"{table}Add{name}")(b, value)
    return getattr(module, f"{table}End")(b)


def _offsets(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def _int32s(b: flatbuffers.Builder, values: Sequence[int] | np.ndarray) -> int:
    return b.CreateNumpyVector(np.asarray(values, dtype=np.int32))


def _sparsity(b: flatbuffers.Builder, spec: dict[str, Any]) -> int:
    dims = []
    for fmt, dense_size, segments, indices in spec["dims"]:
        if fmt == 0:
            dims.append(_table(b, "DimensionMetadata", Format=0, DenseSize=dense_size))
            continue
        seg = _table(b, "Int32Vector", Values=_int32s(b, segments))
        idx = _table(b, "Int32Vector", Values=_int32s(b, indices))
        dims.append(_table(b, "DimensionMetadata", Format=1, ArraySegmentsType=1, ArraySegments=seg,
                           ArrayIndicesType=1, ArrayIndices=idx))
    return _table(b, "SparsityParameters", TraversalOrder=_int32s(b, spec["order"]),
                  BlockMap=_int32s(b, spec["block_map"]), DimMetadata=_offsets(b, dims))


def _flatbuffer(tensors: list[TensorSpec], ops: list[OpSpec], inputs: list[int], outputs: list[int]) -> bytes:
    b = flatbuffers.Builder(1024)
    buffers = [_table(b, "Buffer")]  # buffer 0 is the empty sentinel
    tensor_offsets = []
    for t in tensors:
        buffer_index = 0
        if t.data is not None:
            raw = np.frombuffer(np.ascontiguousarray(t.data).tobytes(), dtype=np.uint8)
            buffers.append(_table(b, "Buffer", Data=b.CreateNumpyVector(raw)))
            buffer_index = len(buffers) - 1
        fields: dict[str, Any] = {"Shape": _int32s(b, t.shape), "Name": b.CreateString(t.name)}
        if t.sparsity is not None:
            fields["Sparsity"] = _sparsity(b, t.sparsity)
        tensor_offsets.append(_table(b, "Tensor", Type=t.type, Buffer=buffer_index, **fields))
    codes = sorted({(op.code, op.custom[0] if op.custom else "") for op in ops})
    op_offsets = []
    for op in ops:
        key = (op.code, op.custom[0] if op.custom else "")
        fields = {"OpcodeIndex": codes.index(key), "Inputs": _int32s(b, op.inputs), "Outputs": _int32s(b, op.outputs)}
        if op.options is not None:
            table, union_type, values = op.options
            fields.update(BuiltinOptions=_table(b, table, **values), BuiltinOptionsType=union_type)
        if op.custom is not None:
            fields["CustomOptions"] = b.CreateNumpyVector(np.frombuffer(op.custom[1], dtype=np.uint8))
        op_offsets.append(_table(b, "Operator", **fields))
    code_offsets = [_table(b, "OperatorCode", DeprecatedBuiltinCode=min(c, 127), BuiltinCode=c, Version=1,
                           **({"CustomCode": b.CreateString(name)} if name else {})) for c, name in codes]
    subgraph = _table(b, "SubGraph", Tensors=_offsets(b, tensor_offsets), Inputs=_int32s(b, inputs),
                      Outputs=_int32s(b, outputs), Operators=_offsets(b, op_offsets), Name=b.CreateString("main"))
    model = _table(b, "Model", Version=3, OperatorCodes=_offsets(b, code_offsets), Subgraphs=_offsets(b, [subgraph]),
                   Buffers=_offsets(b, buffers), Description=b.CreateString("slimfuse test"))
    b.Finish(model, file_identifier=b"TFL3")
    return bytes(b.Output())


def _assert_parity(data: bytes, x: np.ndarray) -> None:
    expected = _tflite_run(_interpreter(data), x)
    model = tflite_to_onnx(data)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = _onnx_run(session, x)
    for name, want in expected.items():
        assert got[name].shape == want.shape
        np.testing.assert_allclose(got[name], want, atol=1e-5, rtol=1e-5, err_msg=name)


def _weights(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("align_corners, half_pixel", [(False, False), (True, False), (False, True)])
def test_resize_bilinear_modes(align_corners: bool, half_pixel: bool) -> None:
    size = TensorSpec("size", (2,), np.array([9, 4], np.int32), TensorType.INT32)
    tensors = [TensorSpec("x", (1, 5, 7, 3)), size, TensorSpec("y", (1, 9, 4, 3))]
    options = ("ResizeBilinearOptions", BuiltinOptions.ResizeBilinearOptions,
               {"AlignCorners": align_corners, "HalfPixelCenters": half_pixel})
    data = _flatbuffer(tensors, [OpSpec(Op.RESIZE_BILINEAR, (0, 1), (2,), options)], [0], [2])
    _assert_parity(data, np.random.default_rng(1).standard_normal((1, 5, 7, 3)).astype(np.float32))


def test_convolutions_with_odd_sizes_dilation_and_fused_clips() -> None:
    """SAME padding on odd sizes puts the extra row after; depth multiplier and dilations; channel concat and pad."""
    rng = np.random.default_rng(2)
    conv = ("Conv2DOptions", BuiltinOptions.Conv2DOptions,
            {"Padding": 0, "StrideW": 2, "StrideH": 2, "FusedActivationFunction": 3, "DilationWFactor": 1, "DilationHFactor": 1})
    depthwise = ("DepthwiseConv2DOptions", BuiltinOptions.DepthwiseConv2DOptions,
                 {"Padding": 0, "StrideW": 1, "StrideH": 1, "DepthMultiplier": 2, "FusedActivationFunction": 2,
                  "DilationWFactor": 2, "DilationHFactor": 2})
    pool = ("Pool2DOptions", BuiltinOptions.Pool2DOptions,
            {"Padding": 0, "StrideW": 2, "StrideH": 2, "FilterWidth": 3, "FilterHeight": 3})
    concat = ("ConcatenationOptions", BuiltinOptions.ConcatenationOptions, {"Axis": -1})
    tensors = [
        TensorSpec("x", (1, 9, 11, 4)),
        TensorSpec("w", (6, 3, 3, 4), _weights(rng, 6, 3, 3, 4)), TensorSpec("b", (6,), _weights(rng, 6)),
        TensorSpec("conv", (1, 5, 6, 6)),
        TensorSpec("dw_w", (1, 3, 3, 12), _weights(rng, 1, 3, 3, 12)), TensorSpec("dw_b", (12,), _weights(rng, 12)),
        TensorSpec("dw", (1, 5, 6, 12)),
        TensorSpec("concat", (1, 5, 6, 18)),
        TensorSpec("pool", (1, 3, 3, 18)),
        TensorSpec("paddings", (4, 2), np.array([[0, 0], [1, 2], [0, 1], [3, 0]], np.int32), TensorType.INT32),
        TensorSpec("padded", (1, 6, 4, 21)),
    ]
    ops = [
        OpSpec(Op.CONV_2D, (0, 1, 2), (3,), conv),
        OpSpec(Op.DEPTHWISE_CONV_2D, (3, 4, 5), (6,), depthwise),
        OpSpec(Op.CONCATENATION, (3, 6), (7,), concat),
        OpSpec(Op.MAX_POOL_2D, (7,), (8,), pool),
        OpSpec(Op.PAD, (8, 9), (10,)),
    ]
    data = _flatbuffer(tensors, ops, [0], [10])
    _assert_parity(data, rng.standard_normal((1, 9, 11, 4)).astype(np.float32))


def test_prelu_and_constant_add_broadcast_in_nchw() -> None:
    """Rank-1 alpha and bias constants must be re-laid out against the NCHW activation; alphas beyond [0, 1] too."""
    rng = np.random.default_rng(4)
    conv = ("Conv2DOptions", BuiltinOptions.Conv2DOptions, {"Padding": 1, "StrideW": 1, "StrideH": 1})
    alpha = np.array([-0.5, 0.25, 2.0], np.float32)
    tensors = [
        TensorSpec("x", (1, 4, 5, 2)), TensorSpec("w", (3, 1, 1, 2), _weights(rng, 3, 1, 1, 2)),
        TensorSpec("b", (3,), _weights(rng, 3)), TensorSpec("conv", (1, 4, 5, 3)),
        TensorSpec("alpha", (3,), alpha), TensorSpec("prelu", (1, 4, 5, 3)),
        TensorSpec("shift", (5, 3), _weights(rng, 5, 3)), TensorSpec("y", (1, 4, 5, 3)),
    ]
    ops = [OpSpec(Op.CONV_2D, (0, 1, 2), (3,), conv), OpSpec(Op.PRELU, (3, 4), (5,)), OpSpec(Op.ADD, (5, 6), (7,))]
    _assert_parity(_flatbuffer(tensors, ops, [0], [7]), rng.standard_normal((1, 4, 5, 2)).astype(np.float32))


def test_squeeze_excite_block_with_hard_swish() -> None:
    """The selfie segmenter's blocks: HARD_SWISH, a global AVERAGE_POOL_2D (and MEAN, the landscape model's form),
    LOGISTIC and a broadcasting MUL with a fused RELU."""
    rng = np.random.default_rng(5)
    pool = ("Pool2DOptions", BuiltinOptions.Pool2DOptions,
            {"Padding": 1, "StrideW": 1, "StrideH": 1, "FilterWidth": 5, "FilterHeight": 4})
    keep = ("ReducerOptions", BuiltinOptions.ReducerOptions, {"KeepDims": True})
    mul = ("MulOptions", BuiltinOptions.MulOptions, {"FusedActivationFunction": 1})
    add = ("AddOptions", BuiltinOptions.AddOptions, {})
    axes = TensorSpec("axes", (2,), np.array([1, 2], np.int32), TensorType.INT32)
    tensors = [TensorSpec("x", (1, 4, 5, 3)), TensorSpec("swish", (1, 4, 5, 3)), TensorSpec("pooled", (1, 1, 1, 3)),
               axes, TensorSpec("mean", (1, 1, 1, 3)), TensorSpec("both", (1, 1, 1, 3)), TensorSpec("gate", (1, 1, 1, 3)),
               TensorSpec("y", (1, 4, 5, 3))]
    ops = [OpSpec(Op.HARD_SWISH, (0,), (1,)), OpSpec(Op.AVERAGE_POOL_2D, (1,), (2,), pool),
           OpSpec(Op.MEAN, (1, 3), (4,), keep), OpSpec(Op.ADD, (2, 4), (5,), add), OpSpec(Op.LOGISTIC, (5,), (6,)),
           OpSpec(Op.MUL, (1, 6), (7,), mul)]
    _assert_parity(_flatbuffer(tensors, ops, [0], [7]), 4 * rng.standard_normal((1, 4, 5, 3)).astype(np.float32))


def test_transpose_convolution_with_bias() -> None:
    """MediaPipe's Convolution2DTransposeBias (no tflite runtime has it): every input pixel spreads its kernel,
    weighted per channel, over its stride x stride block of the output, plus the bias."""
    rng = np.random.default_rng(6)
    weight, bias = _weights(rng, 2, 2, 2, 3), _weights(rng, 2)  # [O, kh, kw, I]
    options = np.array([1, 2, 2], "<i4").tobytes()  # SAME, stride width 2, stride height 2
    tensors = [TensorSpec("x", (1, 3, 4, 3)), TensorSpec("w", (2, 2, 2, 3), weight), TensorSpec("b", (2,), bias),
               TensorSpec("y", (1, 6, 8, 2))]
    ops = [OpSpec(Op.CUSTOM, (0, 1, 2), (3,), custom=("Convolution2DTransposeBias", options))]
    x = rng.standard_normal((1, 3, 4, 3)).astype(np.float32)
    session = ort.InferenceSession(tflite_to_onnx(_flatbuffer(tensors, ops, [0], [3])).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    got = _onnx_run(session, x)["y"]
    expected = np.einsum("nhwi,okli->nhkwlo", x, weight).reshape(1, 6, 8, 2) + bias
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)


def test_block_sparse_densify_and_depth_to_space() -> None:
    """A 2x2-block CSR constant, densified at conversion time, added to a DEPTH_TO_SPACE output.

    Two output channels, so DCR and CRD orderings of DEPTH_TO_SPACE give different results.
    """
    rng = np.random.default_rng(3)
    # Dense [8, 6] constant in 2x2 blocks (4 block rows, 3 block columns); block row 2 is empty.
    blocks = {(0, 1): _weights(rng, 2, 2), (1, 0): _weights(rng, 2, 2), (1, 2): _weights(rng, 2, 2),
              (3, 1): _weights(rng, 2, 2)}
    values = np.concatenate([blocks[k].ravel() for k in sorted(blocks)])
    csr = (1, None, [0, 1, 3, 3, 4], [1, 0, 2, 1])
    sparsity = {"order": [0, 1, 2, 3], "block_map": [0, 1], "dims": [(0, 4, None, None), csr, (0, 2, None, None),
                                                                      (0, 2, None, None)]}
    dense = np.zeros((8, 6), np.float32)
    for (r, c), block in blocks.items():
        dense[2 * r: 2 * r + 2, 2 * c: 2 * c + 2] = block
    d2s = ("DepthToSpaceOptions", BuiltinOptions.DepthToSpaceOptions, {"BlockSize": 2})
    tensors = [
        TensorSpec("x", (1, 2, 3, 8)), TensorSpec("sparse", (8, 6), values, sparsity=sparsity), TensorSpec("dense", (8, 6)),
        TensorSpec("d2s", (1, 4, 6, 2)), TensorSpec("shape", (2,), np.array([8, 6], np.int32), TensorType.INT32),
        TensorSpec("flat", (8, 6)), TensorSpec("y", (8, 6)),
    ]
    ops = [
        OpSpec(Op.DENSIFY, (1,), (2,)),
        OpSpec(Op.DEPTH_TO_SPACE, (0,), (3,), d2s),
        OpSpec(Op.RESHAPE, (3, 4), (5,)),
        OpSpec(Op.ADD, (5, 2), (6,)),
    ]
    data = _flatbuffer(tensors, ops, [0], [6])
    x = rng.standard_normal((1, 2, 3, 8)).astype(np.float32)
    _assert_parity(data, x)
    # With a zero input both runtimes must give back the dense constant itself.
    zero = np.zeros_like(x)
    np.testing.assert_array_equal(_tflite_run_once(data, zero)["y"], dense)
    session = ort.InferenceSession(tflite_to_onnx(data).SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": zero})[0], dense)


def _tflite_run_once(data: bytes, x: np.ndarray) -> dict[str, np.ndarray]:
    return _tflite_run(_interpreter(data), x)


def test_unsupported_op_is_refused() -> None:
    data = _flatbuffer([TensorSpec("x", (1, 4)), TensorSpec("y", (1, 4))], [OpSpec(Op.TANH, (0,), (1,))], [0], [1])
    x = np.linspace(-2, 2, 4, dtype=np.float32)[None]
    np.testing.assert_allclose(_tflite_run_once(data, x)["y"], np.tanh(x), atol=1e-6)  # the flatbuffer is valid
    with pytest.raises(UnsupportedTfliteError, match="TANH"):
        tflite_to_onnx(data)


def _resize_with_both_flags() -> bytes:
    both = ("ResizeBilinearOptions", BuiltinOptions.ResizeBilinearOptions, {"AlignCorners": True, "HalfPixelCenters": True})
    size = TensorSpec("size", (2,), np.array([4, 4], np.int32), TensorType.INT32)
    tensors = [TensorSpec("x", (1, 2, 2, 1)), size, TensorSpec("y", (1, 4, 4, 1))]
    return _flatbuffer(tensors, [OpSpec(Op.RESIZE_BILINEAR, (0, 1), (2,), both)], [0], [2])


def _pool_with_sign_bit_activation() -> bytes:
    sign_bit = ("Pool2DOptions", BuiltinOptions.Pool2DOptions,
                {"Padding": 1, "StrideW": 1, "StrideH": 1, "FilterWidth": 1, "FilterHeight": 1, "FusedActivationFunction": 5})
    tensors = [TensorSpec("x", (1, 2, 2, 1)), TensorSpec("y", (1, 2, 2, 1))]
    return _flatbuffer(tensors, [OpSpec(Op.MAX_POOL_2D, (0,), (1,), sign_bit)], [0], [1])


def _concat_with_relu() -> bytes:
    # tflite's own kernel rejects a fused activation here, and XNNPACK silently drops it.
    relu = ("ConcatenationOptions", BuiltinOptions.ConcatenationOptions, {"Axis": 1, "FusedActivationFunction": 1})
    tensors = [TensorSpec("a", (1, 2)), TensorSpec("b", (1, 2)), TensorSpec("y", (1, 4))]
    return _flatbuffer(tensors, [OpSpec(Op.CONCATENATION, (0, 1), (2,), relu)], [0, 1], [2])


def _int8_dequantize() -> bytes:
    tensors = [TensorSpec("q", (2,), np.array([1, 2], np.int8), TensorType.INT8), TensorSpec("f", (2,)),
               TensorSpec("x", (2,)), TensorSpec("y", (2,))]
    return _flatbuffer(tensors, [OpSpec(Op.DEQUANTIZE, (0,), (1,)), OpSpec(Op.ADD, (2, 1), (3,))], [2], [3])


@pytest.mark.parametrize("build, message", [
    (_resize_with_both_flags, "align_corners"),
    (_pool_with_sign_bit_activation, "fused activation 5"),
    (_concat_with_relu, "CONCATENATION"),
    (_int8_dequantize, "DEQUANTIZE"),
])
def test_unsupported_options_are_refused(build: Callable[[], bytes], message: str) -> None:
    with pytest.raises(UnsupportedTfliteError, match=message):
        tflite_to_onnx(build())


def test_not_a_tflite_file_is_refused() -> None:
    with pytest.raises(UnsupportedTfliteError, match="TFL3"):
        tflite_to_onnx(b"\x08\x01" + b"\x00" * 30)

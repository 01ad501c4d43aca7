"""Our own TFLite → ONNX converter, for the float ops the MediaPipe face models use.

MediaPipe ships its face detector, face mesh and iris models only as `.tflite`; the rest of slimfuse runs
ONNX Runtime, so the fetched files are converted once, at install time, and the result is pinned by sha256.
That pin is why everything here is deterministic: names come from the tflite tensor names, nodes follow
the tflite operator order, and nothing depends on the clock or on dict ordering of inputs we don't control.

Layout: tflite is NHWC, ONNX convolutions are NCHW. The graph keeps the tflite interface (NHWC input and
output tensors under their tflite names) and holds activations NCHW inside; a tensor is transposed only
where a consumer needs the tflite memory order (RESHAPE, graph outputs), and each such view is made once.
Anything this module does not understand raises `UnsupportedTfliteError` rather than guessing.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Protocol, TypeVar

import flatbuffers
import numpy as np
import onnx
import tflite
from onnx import TensorProto, helper, numpy_helper
from tflite.ActivationFunctionType import ActivationFunctionType as Act
from tflite.BuiltinOperator import BuiltinOperator as BuiltinOp
from tflite.BuiltinOptions import BuiltinOptions
from tflite.DimensionType import DimensionType
from tflite.Padding import Padding
from tflite.SparseIndexVector import SparseIndexVector
from tflite.TensorType import TensorType

__all__ = ["UnsupportedTfliteError", "tflite_to_onnx", "convert_file"]

OPSET = 17
# IR 8 is the version that introduced opset 17; any ONNX Runtime that runs opset 17 loads it.
IR_VERSION = 8
PRODUCER = "slimfuse.tflite_import"

# Permutations between the tflite layout of a 4-D activation and the NCHW layout held in the graph.
_TO_NCHW = (0, 3, 1, 2)
_TO_NHWC = (0, 2, 3, 1)
# Where NHWC axis a lives once the tensor is NCHW: N→0, H→2, W→3, C→1.
_NCHW_AXIS_OF_NHWC = (0, 2, 3, 1)

_NUMPY_DTYPE: Mapping[int, np.dtype] = MappingProxyType({
    TensorType.FLOAT32: np.dtype("<f4"),
    TensorType.FLOAT16: np.dtype("<f2"),
    TensorType.INT32: np.dtype("<i4"),
    TensorType.INT64: np.dtype("<i8"),
    TensorType.UINT8: np.dtype("u1"),
    TensorType.INT8: np.dtype("i1"),
})

_OP_NAMES: Mapping[int, str] = MappingProxyType(
    {value: name for name, value in vars(BuiltinOp).items() if not name.startswith("_")}
)

_SPARSE_INDEX_VECTORS: Mapping[int, type] = MappingProxyType({
    SparseIndexVector.Int32Vector: tflite.Int32Vector,
    SparseIndexVector.Uint16Vector: tflite.Uint16Vector,
    SparseIndexVector.Uint8Vector: tflite.Uint8Vector,
})

NCHW = "nchw"
PLAIN = "plain"  # the tensor exactly as tflite defines it



class _FlatbufferTable(Protocol):
    def Init(self, buf: bytes, pos: int) -> None: ...  # noqa: N802 (flatc's name)


_Options = TypeVar("_Options", bound=_FlatbufferTable)


class UnsupportedTfliteError(ValueError):
    """The tflite model uses an op, option or tensor type this converter does not handle."""


@dataclass(frozen=True)
class _Op:
    """One tflite operator, with its tensor indices (-1 marks an omitted optional input)."""

    index: int
    code: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: flatbuffers.table.Table | None
    options_type: int
    custom_options: bytes = b""

    @property
    def label(self) -> str:
        return f"{self.name} (operator {self.index})" if self.index >= 0 else self.name


class _Graph:
    """Conversion state for one model: tflite accessors, folded constants and the ONNX graph being built."""

    def __init__(self, data: bytes, model: tflite.Model, subgraph: tflite.SubGraph) -> None:
        self.data = data
        self.model = model
        self.sg = subgraph
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.consts: dict[int, np.ndarray] = {}
        # ONNX value holding each tflite tensor, per layout (NCHW and/or tflite's own).
        self.values: dict[int, dict[str, str]] = {}
        # Expected shape of every ONNX value we bind, checked against ONNX shape inference at the end.
        self.expected: dict[str, tuple[int, ...]] = {}
        self.tensor_names = self._unique_tensor_names()
        self._used = set(self.tensor_names)
        self._init_cache: dict[tuple[int, str], str] = {}
        self._zero: str | None = None

    # --- tflite side -------------------------------------------------------------------------------

    def _unique_tensor_names(self) -> list[str]:
        # Interface names must survive untouched, so they claim their name first.
        count = self.sg.TensorsLength()
        raw = [(self.sg.Tensors(i).Name() or b"").decode("utf-8", "replace") for i in range(count)]
        first = [int(i) for i in _int_vector(self.sg.InputsAsNumpy())] + [
            int(i) for i in _int_vector(self.sg.OutputsAsNumpy())
        ]
        names: list[str | None] = [None] * count
        seen: set[str] = set()
        for i in first + [i for i in range(count) if i not in first]:
            if names[i] is not None:
                continue
            name = raw[i] if raw[i] and raw[i] not in seen else f"tensor_{i}"
            while name in seen:
                name += "_"
            names[i] = name
            seen.add(name)
        return [n for n in names if n is not None]

    def tensor(self, index: int) -> tflite.Tensor:
        if not 0 <= index < self.sg.TensorsLength():  # -1 marks an omitted optional input
            raise UnsupportedTfliteError(f"tensor index {index} is out of range or an omitted input")
        return self.sg.Tensors(index)

    def shape(self, index: int) -> tuple[int, ...]:
        return tuple(int(d) for d in _int_vector(self.tensor(index).ShapeAsNumpy()))

    def rank(self, index: int) -> int:
        return len(self.shape(index))

    def buffer_bytes(self, index: int) -> bytes | None:
        buf = self.model.Buffers(self.tensor(index).Buffer())
        if buf is None:
            return None
        if buf.Offset() > 1:  # models over 2 GB keep weights after the flatbuffer
            if buf.Offset() + buf.Size() > len(self.data):
                raise UnsupportedTfliteError(f"tensor {self.tensor_names[index]!r}: external buffer is truncated")
            return self.data[buf.Offset(): buf.Offset() + buf.Size()]
        if buf.DataLength() == 0:
            return None
        return buf.DataAsNumpy().tobytes()

    def is_const(self, index: int) -> bool:
        return index in self.consts or self.buffer_bytes(index) is not None

    def const(self, index: int, op: _Op) -> np.ndarray:
        """The constant value of a tensor; sparse storage is refused here, only DENSIFY reads it."""
        if index in self.consts:
            return self.consts[index]
        raw = self.buffer_bytes(index)
        if raw is None:
            raise UnsupportedTfliteError(f"{op.label}: input {self.tensor_names[index]!r} must be a constant")
        tensor = self.tensor(index)
        if tensor.Sparsity() is not None:
            raise UnsupportedTfliteError(f"{op.label}: sparse tensor {self.tensor_names[index]!r} used without DENSIFY")
        _reject_quantized(self, index, op)
        value = np.frombuffer(raw, dtype=_dtype(tensor.Type(), op)).reshape(self.shape(index))
        self.consts[index] = value
        return value

    # --- ONNX side ---------------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self._used:
            name, n = f"{base}_{n}", n + 1
        self._used.add(name)
        return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: object) -> None:
        name = f"{op_type}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name=name, **attrs))

    def initializer(self, value: np.ndarray, base: str) -> str:
        name = self.fresh(base)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def cached_initializer(self, index: int, tag: str, make: Callable[[], np.ndarray]) -> str:
        """One initializer per (tflite tensor, derived form), however many ops share the weight."""
        key = (index, tag)
        if key not in self._init_cache:
            self._init_cache[key] = self.initializer(make(), f"{self.tensor_names[index]}__{tag}")
        return self._init_cache[key]

    def zero(self) -> str:
        """One shared float32 scalar 0."""
        if self._zero is None:
            self._zero = self.initializer(np.zeros((), dtype=np.float32), "zero")
        return self._zero

    def int64(self, values: Sequence[int], base: str) -> str:
        return self.initializer(np.asarray(values, dtype=np.int64), base)

    def output_name(self, index: int, layout: str) -> str:
        """Name for a value an op is about to write; the tflite name is kept for the tflite layout."""
        name = self.tensor_names[index] if layout == PLAIN else self.fresh(f"{self.tensor_names[index]}__nchw")
        self.expected[name] = _layout_shape(self.shape(index), layout)
        return name

    def bind(self, index: int, layout: str, name: str) -> None:
        self.values.setdefault(index, {})[layout] = name

    def has(self, index: int, layout: str) -> bool:
        return layout in self.values.get(index, {})

    def value(self, index: int, layout: str, op: _Op) -> str:
        """The activation in the requested layout, adding one cached transpose the first time it is asked."""
        views = self.values.get(index)
        if not views:
            what = "a constant" if self.is_const(index) else "an undefined tensor"
            name = self.tensor_names[index]
            raise UnsupportedTfliteError(f"{op.label}: input {name!r} is {what} where an activation is expected")
        if layout in views:
            return views[layout]
        if self.rank(index) != 4:
            raise UnsupportedTfliteError(f"{op.label}: NCHW layout requested for a rank-{self.rank(index)} tensor")
        src = views[NCHW if layout == PLAIN else PLAIN]
        out = self.output_name(index, layout)
        if _same_memory_order(self.shape(index)):
            # A reshape is enough when only size-1 axes move; it is free in ONNX Runtime, a transpose is not.
            target = _layout_shape(self.shape(index), layout)
            self.node("Reshape", [src, self.int64(target, f"{out}__shape")], [out])
        else:
            self.node("Transpose", [src], [out], perm=list(_TO_NCHW if layout == NCHW else _TO_NHWC))
        self.bind(index, layout, out)
        return out

    def value_in_tflite_memory_order(self, index: int, op: _Op) -> str:
        """A value whose flat element order is the tflite order: all a reshape needs."""
        views = self.values.get(index, {})
        if PLAIN not in views and NCHW in views and _same_memory_order(self.shape(index)):
            return views[NCHW]
        return self.value(index, PLAIN, op)


# --- small helpers ----------------------------------------------------------------------------------


def _int_vector(value: np.ndarray | int) -> np.ndarray:
    # Flatbuffer accessors return 0 instead of an empty array for an absent vector.
    return value if isinstance(value, np.ndarray) else np.zeros(0, dtype=np.int32)


def _dtype(tensor_type: int, op: _Op) -> np.dtype:
    if tensor_type not in _NUMPY_DTYPE:
        raise UnsupportedTfliteError(f"{op.label}: tensor type {tensor_type} is not supported")
    return _NUMPY_DTYPE[tensor_type]


def _reject_quantized(g: _Graph, index: int, op: _Op) -> None:
    quant = g.tensor(index).Quantization()
    if quant is not None and (quant.ScaleLength() > 0 or quant.DetailsType() != 0):
        raise UnsupportedTfliteError(f"{op.label}: quantized tensor {g.tensor_names[index]!r} is not supported")


def _layout_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    return tuple(shape[a] for a in _TO_NCHW) if layout == NCHW else shape


def _same_memory_order(nhwc: tuple[int, ...]) -> bool:
    """True when NCHW and NHWC hold the elements in the same order (C == 1 or H*W == 1)."""
    return nhwc[3] == 1 or nhwc[1] * nhwc[2] == 1


def _nhwc_const_as_nchw(value: np.ndarray) -> np.ndarray:
    """A constant that broadcasts against an NHWC activation, rearranged to broadcast against its NCHW form."""
    if value.ndim > 4:
        raise UnsupportedTfliteError(f"constant of rank {value.ndim} cannot broadcast against a 4-D activation")
    return value.reshape((1,) * (4 - value.ndim) + value.shape).transpose(_TO_NCHW)


def _options(op: _Op, cls: type[_Options], expected_type: int) -> _Options | None:
    """The op's builtin options as `cls`, or None when the model omits them (all fields at defaults)."""
    if op.options is None or op.options_type == BuiltinOptions.NONE:
        return None
    if op.options_type != expected_type:
        raise UnsupportedTfliteError(f"{op.label}: unexpected options type {op.options_type}")
    opts = cls()
    opts.Init(op.options.Bytes, op.options.Pos)
    return opts


def _require_options(op: _Op, cls: type[_Options], expected_type: int) -> _Options:
    opts = _options(op, cls, expected_type)
    if opts is None:
        raise UnsupportedTfliteError(f"{op.label}: builtin options are missing")
    return opts


def _require_float_activation(g: _Graph, index: int, op: _Op, rank: int | None = None) -> None:
    tensor = g.tensor(index)
    if tensor.Type() != TensorType.FLOAT32:
        name = g.tensor_names[index]
        raise UnsupportedTfliteError(f"{op.label}: tensor {name!r} has type {tensor.Type()}, only float32 is supported")
    _reject_quantized(g, index, op)
    if rank is not None and g.rank(index) != rank:
        raise UnsupportedTfliteError(f"{op.label}: expected a rank-{rank} tensor, got shape {g.shape(index)}")


def _check_arity(op: _Op, inputs: Sequence[int], outputs: int = 1) -> None:
    if len(op.inputs) not in inputs or len(op.outputs) != outputs:
        raise UnsupportedTfliteError(f"{op.label}: unexpected number of inputs/outputs ({len(op.inputs)}/{len(op.outputs)})")


# --- fused activations ------------------------------------------------------------------------------


def _emit(g: _Graph, op: _Op, op_type: str, inputs: Sequence[str], layout: str, activation: int, **attrs: object) -> None:
    """Emits `op_type` writing the op's output, followed by its fused activation if any."""
    out_index = op.outputs[0]
    _require_float_activation(g, out_index, op)
    final = g.output_name(out_index, layout)
    if activation == Act.NONE:
        g.node(op_type, inputs, [final], **attrs)
    else:
        linear = g.fresh(f"{final}__linear")
        g.node(op_type, inputs, [linear], **attrs)
        _activation(g, op, activation, linear, final)
    g.bind(out_index, layout, final)


def _activation(g: _Graph, op: _Op, activation: int, src: str, dst: str) -> None:
    if activation == Act.RELU:
        g.node("Relu", [src], [dst])
    elif activation == Act.TANH:
        g.node("Tanh", [src], [dst])
    elif activation in (Act.RELU6, Act.RELU_N1_TO_1):
        low, high = (0.0, 6.0) if activation == Act.RELU6 else (-1.0, 1.0)
        bounds = [g.initializer(np.asarray(v, dtype=np.float32), f"{dst}__{tag}") for v, tag in ((low, "min"), (high, "max"))]
        g.node("Clip", [src, *bounds], [dst])
    else:
        raise UnsupportedTfliteError(f"{op.label}: fused activation {activation} is not supported")


# --- convolution and pooling ------------------------------------------------------------------------


def _spatial_pads(op: _Op, padding: int, in_hw: Sequence[int], out_hw: Sequence[int], kernel: Sequence[int],
                  strides: Sequence[int], dilations: Sequence[int]) -> list[int]:
    """ONNX pads [top, left, bottom, right] for tflite SAME/VALID; the extra row/column goes after, as in TF."""
    begin, end = [], []
    for size, out, k, s, d in zip(in_hw, out_hw, kernel, strides, dilations, strict=True):
        span = (k - 1) * d + 1
        if padding == Padding.SAME:
            expected = -(-size // s)
        elif padding == Padding.VALID:
            expected = -(-(size - span + 1) // s)
        else:
            raise UnsupportedTfliteError(f"{op.label}: padding mode {padding} is not supported")
        if expected != out or s < 1 or d < 1:
            raise UnsupportedTfliteError(f"{op.label}: output size {out} does not match padding/stride (expected {expected})")
        total = max((out - 1) * s + span - size, 0) if padding == Padding.SAME else 0
        begin.append(total // 2)
        end.append(total - total // 2)
    return begin + end


def _conv_bias(g: _Graph, op: _Op, out_channels: int) -> list[str]:
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return []
    bias = g.const(op.inputs[2], op)
    if bias.dtype != np.float32 or bias.shape != (out_channels,):
        raise UnsupportedTfliteError(f"{op.label}: bias must be float32 [{out_channels}], got {bias.dtype} {bias.shape}")
    return [g.cached_initializer(op.inputs[2], "bias", lambda: bias)]


def _float_weight(g: _Graph, op: _Op) -> np.ndarray:
    weight = g.const(op.inputs[1], op)
    if weight.dtype != np.float32 or weight.ndim != 4:
        raise UnsupportedTfliteError(f"{op.label}: weights must be 4-D float32, got {weight.dtype} {weight.shape}")
    return weight


def _conv_node(g: _Graph, op: _Op, opts: tflite.Conv2DOptions | tflite.DepthwiseConv2DOptions, weight_name: str,
               kernel: Sequence[int], out_channels: int, group: int) -> None:
    x, out = op.inputs[0], op.outputs[0]
    strides = (opts.StrideH(), opts.StrideW())
    dilations = (opts.DilationHFactor(), opts.DilationWFactor())
    pads = _spatial_pads(op, opts.Padding(), g.shape(x)[1:3], g.shape(out)[1:3], kernel, strides, dilations)
    if g.shape(out)[3] != out_channels:
        raise UnsupportedTfliteError(f"{op.label}: output has {g.shape(out)[3]} channels, weights give {out_channels}")
    inputs = [g.value(x, NCHW, op), weight_name, *_conv_bias(g, op, out_channels)]
    _emit(g, op, "Conv", inputs, NCHW, opts.FusedActivationFunction(), kernel_shape=list(kernel),
          strides=list(strides), dilations=list(dilations), pads=pads, group=group)


def _convert_conv_2d(g: _Graph, op: _Op) -> None:
    _check_arity(op, (2, 3))
    _require_float_activation(g, op.inputs[0], op, rank=4)
    opts = _require_options(op, tflite.Conv2DOptions, BuiltinOptions.Conv2DOptions)
    weight = _float_weight(g, op)  # [O, kh, kw, I/groups]
    in_channels = g.shape(op.inputs[0])[3]
    if in_channels % weight.shape[3]:
        raise UnsupportedTfliteError(f"{op.label}: {in_channels} input channels do not split into groups of {weight.shape[3]}")
    name = g.cached_initializer(op.inputs[1], "oihw", lambda: weight.transpose(0, 3, 1, 2))
    _conv_node(g, op, opts, name, weight.shape[1:3], weight.shape[0], in_channels // weight.shape[3])


def _convert_depthwise_conv_2d(g: _Graph, op: _Op) -> None:
    _check_arity(op, (2, 3))
    _require_float_activation(g, op.inputs[0], op, rank=4)
    opts = _require_options(op, tflite.DepthwiseConv2DOptions, BuiltinOptions.DepthwiseConv2DOptions)
    weight = _float_weight(g, op)  # [1, kh, kw, C*M]; output channel c*M+m reads input channel c
    in_channels = g.shape(op.inputs[0])[3]
    if weight.shape[0] != 1 or weight.shape[3] % in_channels:
        raise UnsupportedTfliteError(f"{op.label}: weights {weight.shape} do not fit {in_channels} input channels")
    # ONNX grouped conv with one group per input channel gives the same channel order c*M+m.
    name = g.cached_initializer(op.inputs[1], "depthwise", lambda: weight.transpose(3, 0, 1, 2))
    _conv_node(g, op, opts, name, weight.shape[1:3], weight.shape[3], in_channels)


def _pool(g: _Graph, op: _Op, op_type: str) -> None:
    _check_arity(op, (1,))
    x, out = op.inputs[0], op.outputs[0]
    _require_float_activation(g, x, op, rank=4)
    opts = _require_options(op, tflite.Pool2DOptions, BuiltinOptions.Pool2DOptions)
    kernel = (opts.FilterHeight(), opts.FilterWidth())
    strides = (opts.StrideH(), opts.StrideW())
    # ONNX MaxPool and AveragePool (count_include_pad 0), like tflite, leave padded cells out, so SAME carries over.
    pads = _spatial_pads(op, opts.Padding(), g.shape(x)[1:3], g.shape(out)[1:3], kernel, strides, (1, 1))
    _emit(g, op, op_type, [g.value(x, NCHW, op)], NCHW, opts.FusedActivationFunction(),
          kernel_shape=list(kernel), strides=list(strides), pads=pads)


def _convert_max_pool_2d(g: _Graph, op: _Op) -> None:
    _pool(g, op, "MaxPool")


def _convert_average_pool_2d(g: _Graph, op: _Op) -> None:
    _pool(g, op, "AveragePool")


def _convert_mean(g: _Graph, op: _Op) -> None:
    """MEAN over spatial axes of a 4-D activation, dimensions kept (a global average pool)."""
    _check_arity(op, (2,))
    x = op.inputs[0]
    _require_float_activation(g, x, op, rank=4)
    opts = _options(op, tflite.ReducerOptions, BuiltinOptions.ReducerOptions)
    axes = sorted({int(a) % 4 for a in np.ravel(g.const(op.inputs[1], op))})
    if opts is None or not opts.KeepDims() or 3 in axes or 0 in axes:
        raise UnsupportedTfliteError(f"{op.label}: only a spatial MEAN keeping its dimensions is supported")
    _emit(g, op, "ReduceMean", [g.value(x, NCHW, op)], NCHW, Act.NONE,
          axes=[_NCHW_AXIS_OF_NHWC[a] for a in axes], keepdims=1)


def _convert_transpose_conv_bias(g: _Graph, op: _Op) -> None:
    """MediaPipe's custom Convolution2DTransposeBias: a transposed convolution with a bias. Weights are
    [O, kh, kw, I]; the custom options are three int32: padding (tflite's enum), stride width, stride height."""
    _check_arity(op, (3,))
    x, out = op.inputs[0], op.outputs[0]
    _require_float_activation(g, x, op, rank=4)
    if len(op.custom_options) != 12:
        raise UnsupportedTfliteError(f"{op.label}: expected 12 bytes of options, got {len(op.custom_options)}")
    padding, stride_w, stride_h = (int(v) for v in np.frombuffer(op.custom_options, dtype="<i4"))
    weight = _float_weight(g, op)
    out_channels, kernel = weight.shape[0], weight.shape[1:3]
    in_hw, out_hw = g.shape(x)[1:3], g.shape(out)[1:3]
    # Forward-conv geometry from the output's side: SAME gives in = ceil(out / stride).
    pads = _spatial_pads(op, padding, out_hw, in_hw, kernel, (stride_h, stride_w), (1, 1))
    if g.shape(out)[3] != out_channels or weight.shape[3] != g.shape(x)[3]:
        raise UnsupportedTfliteError(f"{op.label}: weights {weight.shape} do not fit {g.shape(x)} -> {g.shape(out)}")
    name = g.cached_initializer(op.inputs[1], "iohw", lambda: weight.transpose(3, 0, 1, 2))
    inputs = [g.value(x, NCHW, op), name, *_conv_bias(g, op, out_channels)]
    _emit(g, op, "ConvTranspose", inputs, NCHW, Act.NONE, kernel_shape=list(kernel), strides=[stride_h, stride_w],
          pads=pads, output_shape=list(out_hw))


# --- elementwise ------------------------------------------------------------------------------------


def _elementwise_inputs(g: _Graph, op: _Op) -> tuple[list[str], str]:
    """Inputs in one shared layout: NCHW when every activation is 4-D and one is already NCHW, else tflite's."""
    activations = [i for i in op.inputs if not g.is_const(i)]
    if not activations:
        raise UnsupportedTfliteError(f"{op.label}: ops on constants only are not supported")
    for index in activations:
        _require_float_activation(g, index, op)
    four_d = g.rank(op.outputs[0]) == 4 and all(g.rank(i) == 4 for i in activations)
    layout = NCHW if four_d and any(g.has(i, NCHW) for i in activations) else PLAIN
    names = []
    for index in op.inputs:
        if index in activations:
            names.append(g.value(index, layout, op))
            continue
        value = g.const(index, op)
        if value.dtype != np.float32:
            raise UnsupportedTfliteError(f"{op.label}: constant operand must be float32, got {value.dtype}")
        make = (lambda v=value: _nhwc_const_as_nchw(v)) if layout == NCHW else (lambda v=value: v)
        names.append(g.cached_initializer(index, layout, make))
    return names, layout


def _convert_add(g: _Graph, op: _Op) -> None:
    _check_arity(op, (2,))
    opts = _options(op, tflite.AddOptions, BuiltinOptions.AddOptions)
    names, layout = _elementwise_inputs(g, op)
    _emit(g, op, "Add", names, layout, opts.FusedActivationFunction() if opts else Act.NONE)


def _convert_mul(g: _Graph, op: _Op) -> None:
    _check_arity(op, (2,))
    opts = _options(op, tflite.MulOptions, BuiltinOptions.MulOptions)
    names, layout = _elementwise_inputs(g, op)
    _emit(g, op, "Mul", names, layout, opts.FusedActivationFunction() if opts else Act.NONE)


def _unary(op_type: str) -> Callable[[_Graph, _Op], None]:
    def convert(g: _Graph, op: _Op) -> None:
        _check_arity(op, (1,))
        names, layout = _elementwise_inputs(g, op)
        _emit(g, op, op_type, names, layout, Act.NONE)

    return convert


def _convert_relu(g: _Graph, op: _Op) -> None:
    _check_arity(op, (1,))
    names, layout = _elementwise_inputs(g, op)
    _emit(g, op, "Relu", names, layout, Act.NONE)


def _convert_prelu(g: _Graph, op: _Op) -> None:
    _check_arity(op, (2,))
    if g.is_const(op.inputs[0]):
        raise UnsupportedTfliteError(f"{op.label}: constant PRELU input is not supported")
    # The alpha constant is re-laid out with the activation, so [1,1,C] becomes [1,C,1,1] in NCHW.
    (x, alpha), layout = _elementwise_inputs(g, op)
    out_index = op.outputs[0]
    _require_float_activation(g, out_index, op)
    out = g.output_name(out_index, layout)
    # relu(x) + alpha*min(x, 0) is exactly PReLU (one term is always zero); ONNX Runtime's own PRelu takes a
    # generic broadcast path that was 60% of the face mesh's run time, this form runs it 2.7x faster.
    positive, negative, scaled = (g.fresh(f"{out}__{part}") for part in ("positive", "negative", "scaled"))
    g.node("Relu", [x], [positive])
    g.node("Min", [x, g.zero()], [negative])
    g.node("Mul", [negative, alpha], [scaled])
    g.node("Add", [positive, scaled], [out])
    g.bind(out_index, layout, out)


# --- layout-sensitive ops ---------------------------------------------------------------------------


def _convert_pad(g: _Graph, op: _Op) -> None:
    _check_arity(op, (2,))
    x = op.inputs[0]
    _require_float_activation(g, x, op)
    paddings = g.const(op.inputs[1], op)
    if paddings.dtype.kind != "i" or paddings.shape != (g.rank(x), 2) or (paddings < 0).any():
        raise UnsupportedTfliteError(f"{op.label}: paddings must be non-negative integers of shape ({g.rank(x)}, 2)")
    layout = NCHW if g.rank(x) == 4 else PLAIN
    if layout == NCHW:
        paddings = paddings[list(_TO_NCHW)]
    pads = [int(p) for p in paddings[:, 0]] + [int(p) for p in paddings[:, 1]]
    src = g.value(x, layout, op)
    _emit(g, op, "Pad", [src, g.int64(pads, f"{g.tensor_names[op.outputs[0]]}__pads")], layout, Act.NONE, mode="constant")


def _convert_concatenation(g: _Graph, op: _Op) -> None:
    if len(op.outputs) != 1 or not op.inputs:
        raise UnsupportedTfliteError(f"{op.label}: unexpected number of inputs/outputs")
    opts = _require_options(op, tflite.ConcatenationOptions, BuiltinOptions.ConcatenationOptions)
    if opts.FusedActivationFunction() != Act.NONE:
        # The reference kernel rejects this and XNNPACK silently drops it: there is no meaning to copy.
        raise UnsupportedTfliteError(f"{op.label}: fused activation {opts.FusedActivationFunction()} on CONCATENATION")
    rank = g.rank(op.outputs[0])
    axis = opts.Axis() + rank if opts.Axis() < 0 else opts.Axis()
    if not 0 <= axis < rank:
        raise UnsupportedTfliteError(f"{op.label}: axis {opts.Axis()} out of range for rank {rank}")
    for index in op.inputs:
        if g.is_const(index):
            raise UnsupportedTfliteError(f"{op.label}: constant concatenation operands are not supported")
        _require_float_activation(g, index, op, rank=rank)
    # Stay in whichever layout every input already has; NCHW is the default for 4-D activations.
    all_plain = all(g.has(i, PLAIN) for i in op.inputs)
    layout = NCHW if rank == 4 and not all_plain else PLAIN
    onnx_axis = _NCHW_AXIS_OF_NHWC[axis] if layout == NCHW else axis
    names = [g.value(i, layout, op) for i in op.inputs]
    _emit(g, op, "Concat", names, layout, Act.NONE, axis=onnx_axis)


def _convert_reshape(g: _Graph, op: _Op) -> None:
    _check_arity(op, (1, 2))
    x, out = op.inputs[0], op.outputs[0]
    _require_float_activation(g, x, op)
    # The output tensor's static shape is authoritative; the shape input/option only restates it.
    shape = g.shape(out)
    if int(np.prod(shape)) != int(np.prod(g.shape(x))):
        raise UnsupportedTfliteError(f"{op.label}: cannot reshape {g.shape(x)} to {shape}")
    src = g.value_in_tflite_memory_order(x, op)
    _emit(g, op, "Reshape", [src, g.int64(shape, f"{g.tensor_names[out]}__shape")], PLAIN, Act.NONE)


def _resize_mode(op: _Op, align_corners: bool, half_pixel_centers: bool) -> str:
    if align_corners and half_pixel_centers:
        raise UnsupportedTfliteError(f"{op.label}: align_corners together with half_pixel_centers is not supported")
    if align_corners:
        return "align_corners"
    return "half_pixel" if half_pixel_centers else "asymmetric"


def _convert_resize_bilinear(g: _Graph, op: _Op) -> None:
    _check_arity(op, (2,))
    x, out = op.inputs[0], op.outputs[0]
    _require_float_activation(g, x, op, rank=4)
    opts = _options(op, tflite.ResizeBilinearOptions, BuiltinOptions.ResizeBilinearOptions)
    align, half = (bool(opts.AlignCorners()), bool(opts.HalfPixelCenters())) if opts else (False, False)
    size = g.const(op.inputs[1], op)
    if size.shape != (2,) or tuple(int(s) for s in size) != g.shape(out)[1:3]:
        raise UnsupportedTfliteError(f"{op.label}: size {size.tolist()} does not match output shape {g.shape(out)}")
    sizes = _layout_shape(g.shape(out), NCHW)
    inputs = [g.value(x, NCHW, op), "", "", g.int64(sizes, f"{g.tensor_names[out]}__sizes")]
    # TF clamps source coordinates to the image, which is what ONNX Runtime does for linear mode too.
    _emit(g, op, "Resize", inputs, NCHW, Act.NONE, mode="linear",
          coordinate_transformation_mode=_resize_mode(op, align, half))


def _convert_depth_to_space(g: _Graph, op: _Op) -> None:
    _check_arity(op, (1,))
    x = op.inputs[0]
    _require_float_activation(g, x, op, rank=4)
    opts = _require_options(op, tflite.DepthToSpaceOptions, BuiltinOptions.DepthToSpaceOptions)
    if opts.BlockSize() < 1:
        raise UnsupportedTfliteError(f"{op.label}: block size {opts.BlockSize()}")
    # TF splits depth as (row offset, column offset, channel): that is ONNX's DCR order.
    _emit(g, op, "DepthToSpace", [g.value(x, NCHW, op)], NCHW, Act.NONE, blocksize=opts.BlockSize(), mode="DCR")


# --- constant folding -------------------------------------------------------------------------------


def _convert_dequantize(g: _Graph, op: _Op) -> None:
    """float16 weights stored for size: widened to float32 now, so the ONNX graph holds float32 initializers."""
    _check_arity(op, (1,))
    src, out = op.inputs[0], op.outputs[0]
    if not g.is_const(src):
        raise UnsupportedTfliteError(f"{op.label}: DEQUANTIZE of a runtime tensor is not supported")
    value = g.const(src, op)
    if value.dtype != np.float16 or g.tensor(out).Type() != TensorType.FLOAT32:
        raise UnsupportedTfliteError(f"{op.label}: only float16 → float32 DEQUANTIZE is supported, got {value.dtype}")
    g.consts[out] = value.astype(np.float32)


def _index_vector(kind: int, table: flatbuffers.table.Table | None, op: _Op) -> np.ndarray:
    if table is None or kind not in _SPARSE_INDEX_VECTORS:
        raise UnsupportedTfliteError(f"{op.label}: sparse index vector of type {kind} is not supported")
    vector = _SPARSE_INDEX_VECTORS[kind]()
    vector.Init(table.Bytes, table.Pos)
    return _int_vector(vector.ValuesAsNumpy()).astype(np.int64)


def _walk_sparse_levels(sparsity: tflite.SparsityParameters, op: _Op) -> tuple[np.ndarray, list[np.ndarray]]:
    """Walks the stored dimensions in traversal order; returns each value's position and its per-level coordinate."""
    positions = np.zeros(1, dtype=np.int64)
    coords: list[np.ndarray] = []
    for level in range(sparsity.DimMetadataLength()):
        meta = sparsity.DimMetadata(level)
        if meta.Format() == DimensionType.DENSE:
            size = int(meta.DenseSize())
            coords = [np.repeat(c, size) for c in coords] + [np.tile(np.arange(size, dtype=np.int64), len(positions))]
            positions = (positions[:, None] * size + np.arange(size, dtype=np.int64)).ravel()
        elif meta.Format() == DimensionType.SPARSE_CSR:
            segments = _index_vector(meta.ArraySegmentsType(), meta.ArraySegments(), op)
            indices = _index_vector(meta.ArrayIndicesType(), meta.ArrayIndices(), op)
            if positions.size and positions.max() + 1 >= len(segments):
                raise UnsupportedTfliteError(f"{op.label}: sparse segments are truncated")
            starts, counts = segments[positions], segments[positions + 1] - segments[positions]
            # Position k of this level is entry k of `indices`; expand every segment into its run of entries.
            runs = np.arange(counts.sum(), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
            positions = np.repeat(starts, counts) + runs
            coords = [np.repeat(c, counts) for c in coords] + [indices[positions]]
        else:
            raise UnsupportedTfliteError(f"{op.label}: sparse dimension format {meta.Format()} is not supported")
    return positions, coords


def _densify(values: np.ndarray, dense_shape: tuple[int, ...], sparsity: tflite.SparsityParameters, op: _Op) -> np.ndarray:
    """Expands tflite sparse storage (CSR levels, optional blocks) into the dense tensor."""
    order = [int(i) for i in _int_vector(sparsity.TraversalOrderAsNumpy())]
    block_map = [int(i) for i in _int_vector(sparsity.BlockMapAsNumpy())]
    rank = len(dense_shape)
    if sorted(order) != list(range(rank + len(block_map))) or sparsity.DimMetadataLength() != len(order):
        raise UnsupportedTfliteError(f"{op.label}: inconsistent sparsity traversal order {order}")
    if order[rank:] != list(range(rank, rank + len(block_map))) or len(set(block_map)) != len(block_map):
        # tflite reads block sizes as if block dims came last in order; anything else is ambiguous.
        raise UnsupportedTfliteError(f"{op.label}: block dims must be traversed last, got order {order}")
    positions, level_coords = _walk_sparse_levels(sparsity, op)
    if positions.size and positions.max() >= values.size:
        raise UnsupportedTfliteError(f"{op.label}: sparse values are truncated")
    coord_of = {dim: level_coords[level] for level, dim in enumerate(order)}
    # Block dims (rank + j) hold the offset inside a block of original dim block_map[j].
    for j, dim in enumerate(block_map):
        block = int(sparsity.DimMetadata(order.index(rank + j)).DenseSize())
        coord_of[dim] = coord_of[dim] * block + coord_of[rank + j]
    index = tuple(coord_of[d] for d in range(rank))
    if any((c >= s).any() for c, s in zip(index, dense_shape, strict=True)):
        raise UnsupportedTfliteError(f"{op.label}: sparse indices exceed the dense shape {dense_shape}")
    dense = np.zeros(dense_shape, dtype=values.dtype)
    dense[index] = values[positions]
    return dense


def _convert_densify(g: _Graph, op: _Op) -> None:
    _check_arity(op, (1,))
    src, out = op.inputs[0], op.outputs[0]
    tensor = g.tensor(src)
    sparsity = tensor.Sparsity()
    raw = g.buffer_bytes(src)
    if sparsity is None or raw is None:
        raise UnsupportedTfliteError(f"{op.label}: DENSIFY needs a constant sparse tensor")
    _reject_quantized(g, src, op)
    values = np.frombuffer(raw, dtype=_dtype(tensor.Type(), op))
    g.consts[out] = _densify(values, g.shape(src), sparsity, op)


# --- driver -----------------------------------------------------------------------------------------

_Converter = Callable[[_Graph, _Op], None]

_CONVERTERS: Mapping[int, _Converter] = MappingProxyType({
    BuiltinOp.ADD: _convert_add,
    BuiltinOp.AVERAGE_POOL_2D: _convert_average_pool_2d,
    BuiltinOp.CONCATENATION: _convert_concatenation,
    BuiltinOp.CONV_2D: _convert_conv_2d,
    BuiltinOp.DENSIFY: _convert_densify,
    BuiltinOp.DEPTHWISE_CONV_2D: _convert_depthwise_conv_2d,
    BuiltinOp.DEPTH_TO_SPACE: _convert_depth_to_space,
    BuiltinOp.DEQUANTIZE: _convert_dequantize,
    BuiltinOp.HARD_SWISH: _unary("HardSwish"),  # x * relu6(x + 3) / 6: ONNX's alpha 1/6, beta 1/2
    BuiltinOp.LOGISTIC: _unary("Sigmoid"),
    BuiltinOp.MAX_POOL_2D: _convert_max_pool_2d,
    BuiltinOp.MEAN: _convert_mean,
    BuiltinOp.MUL: _convert_mul,
    BuiltinOp.PAD: _convert_pad,
    BuiltinOp.PRELU: _convert_prelu,
    BuiltinOp.RELU: _convert_relu,
    BuiltinOp.RESHAPE: _convert_reshape,
    BuiltinOp.RESIZE_BILINEAR: _convert_resize_bilinear,
})

_CUSTOM_CONVERTERS: Mapping[str, _Converter] = MappingProxyType({
    "Convolution2DTransposeBias": _convert_transpose_conv_bias,
})


def _read_op(model: tflite.Model, sg: tflite.SubGraph, index: int) -> _Op:
    raw = sg.Operators(index)
    if raw.OpcodeIndex() >= model.OperatorCodesLength():
        raise UnsupportedTfliteError(f"operator {index}: opcode index {raw.OpcodeIndex()} out of range")
    code_entry = model.OperatorCodes(raw.OpcodeIndex())
    code = int(code_entry.BuiltinCode())
    if code == BuiltinOp.CUSTOM:
        custom = (code_entry.CustomCode() or b"").decode("utf-8", "replace")
        name = f"CUSTOM:{custom}"
    else:
        name = _OP_NAMES.get(code, f"builtin op {code}")
    if raw.BuiltinOptions2Type() != 0:
        raise UnsupportedTfliteError(f"{name} (operator {index}): builtin_options_2 are not supported")
    return _Op(
        index=index, code=code, name=name,
        inputs=tuple(int(i) for i in _int_vector(raw.InputsAsNumpy())),
        outputs=tuple(int(i) for i in _int_vector(raw.OutputsAsNumpy())),
        options=raw.BuiltinOptions(), options_type=int(raw.BuiltinOptionsType()),
        custom_options=_int_vector(raw.CustomOptionsAsNumpy()).astype(np.uint8).tobytes(),
    )


def _load(data: bytes) -> tuple[tflite.Model, tflite.SubGraph]:
    if len(data) < 8 or not tflite.Model.ModelBufferHasIdentifier(data, 0):
        raise UnsupportedTfliteError("not a tflite flatbuffer (missing the TFL3 identifier)")
    model = tflite.Model.GetRootAs(data, 0)
    if model.SubgraphsLength() != 1:
        raise UnsupportedTfliteError(f"models with {model.SubgraphsLength()} subgraphs are not supported")
    return model, model.Subgraphs(0)


def _graph_input(g: _Graph, index: int) -> onnx.ValueInfoProto:
    op = _Op(-1, -1, f"graph input {g.tensor_names[index]!r}", (index,), (), None, 0)
    _require_float_activation(g, index, op)
    name = g.tensor_names[index]
    g.bind(index, PLAIN, name)
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(g.shape(index)))


def _graph_output(g: _Graph, index: int) -> onnx.ValueInfoProto:
    op = _Op(-1, -1, f"graph output {g.tensor_names[index]!r}", (index,), (), None, 0)
    _require_float_activation(g, index, op)
    name = g.value(index, PLAIN, op)
    if name != g.tensor_names[index]:
        raise UnsupportedTfliteError(f"graph output {g.tensor_names[index]!r} cannot keep its name")
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(g.shape(index)))


def _check_model(model: onnx.ModelProto, expected: Mapping[str, tuple[int, ...]]) -> None:
    """Every value's ONNX-inferred shape must equal the tflite shape it stands for; catches layout slips."""
    try:
        onnx.checker.check_model(model)
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise UnsupportedTfliteError(f"the converted graph is not valid ONNX: {exc}") from exc
    for info in inferred.graph.value_info:
        if info.name in expected:
            dims = tuple(d.dim_value for d in info.type.tensor_type.shape.dim)
            if dims != expected[info.name]:
                raise UnsupportedTfliteError(f"converted value {info.name!r} has shape {dims}, tflite says {expected[info.name]}")


def tflite_to_onnx(data: bytes, *, graph_name: str = "model") -> onnx.ModelProto:
    """Converts a float tflite model to an opset-17 ONNX model with the same NHWC interface."""
    data = bytes(data)
    model, sg = _load(data)
    g = _Graph(data, model, sg)
    inputs = [_graph_input(g, int(i)) for i in _int_vector(sg.InputsAsNumpy())]
    for index in range(sg.OperatorsLength()):
        op = _read_op(model, sg, index)
        converter = (_CONVERTERS.get(op.code) if op.code != BuiltinOp.CUSTOM
                     else _CUSTOM_CONVERTERS.get(op.name.removeprefix("CUSTOM:")))
        if converter is None:
            raise UnsupportedTfliteError(f"{op.label}: op {op.name} is not supported")
        converter(g, op)
    outputs = [_graph_output(g, int(i)) for i in _int_vector(sg.OutputsAsNumpy())]
    graph = helper.make_graph(g.nodes, graph_name, inputs, outputs, initializer=g.initializers)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                   producer_name=PRODUCER, ir_version=IR_VERSION)
    _check_model(onnx_model, g.expected)
    return onnx_model


def convert_file(src: Path, dst: Path) -> None:
    """Converts `src` (.tflite) and writes the serialized ONNX model to `dst`; same input, same bytes."""
    src, dst = Path(src), Path(dst)
    model = tflite_to_onnx(src.read_bytes(), graph_name=src.stem)
    dst.write_bytes(model.SerializeToString(deterministic=True))

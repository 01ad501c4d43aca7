"""int8 variants with ONNX Runtime's quantisation tools, and ONNX Runtime's offline-optimised graph.

- static (`quantize_static`): QDQ format, int8 weights per output channel (depthwise convolutions differ a lot
  from channel to channel), uint8 activations (on this project's CPU, FaceMesh ran about twice as fast with them
  as with int8 activations), ranges calibrated (min / max) on real face crops. The layers that write the model's
  outputs (through Reshape / Transpose) read float activations and keep only their weights in int8 (per output
  channel, dequantised when the session loads): quantising their inputs was most of FaceMesh's int8 landmark
  error (0.46 -> 0.36 px on the calibration crops), and their weights are most of its size (1404 x 32 x 3 x 3).
- dynamic (`quantize_dynamic`): uint8 weights, activations quantised at run time; no calibration.
- optimized: the graph ONNX Runtime runs after its own rewrites (`SessionOptions.optimized_model_filepath`), at
  the basic or extended level, which stay portable across execution providers (the `all` level adds
  layout changes specific to the machine that saved it).
"""
from __future__ import annotations

import contextlib
import inspect
import io
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import onnx
from slimfuse.models.runtime import QUIET_LOG_SEVERITY
from slimfuse.optimize.calibration import activation_ranges
from onnx import helper, numpy_helper

OrtLevel = Literal["basic", "extended"]
Calibrator = Literal["streamed", "onnxruntime"]
LAYOUT_OPS = frozenset({"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Identity"})


class FeedReader:
    """onnxruntime.quantization's CalibrationDataReader over a list of feeds (one dict of inputs per run)."""

    def __init__(self, feeds: Sequence[Mapping[str, np.ndarray]]) -> None:
        self._feeds = [dict(feed) for feed in feeds]
        self._iterator: Iterator[dict[str, np.ndarray]] = iter(self._feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._iterator, None)

    def rewind(self) -> None:
        self._iterator = iter(self._feeds)


def output_heads(model: onnx.ModelProto) -> list[str]:
    """Names of the nodes that compute the graph's outputs, looking through layout-only nodes."""
    producers = {name: node for node in model.graph.node for name in node.output}
    heads: list[str] = []
    for output in model.graph.output:
        node = producers.get(output.name)
        while node is not None and node.op_type in LAYOUT_OPS and node.input:
            node = producers.get(node.input[0])
        if node is not None and node.name and node.name not in heads:
            heads.append(node.name)
    return heads


def quantize_static_model(source: Path, destination: Path, feeds: Sequence[Mapping[str, np.ndarray]],
                          per_channel: bool = True, keep_heads: bool = True,
                          calibrator: Calibrator = "streamed") -> dict[str, object]:
    """Write the static int8 (QDQ) variant of `source` to `destination`; returns how it was made.

    The ranges are `activation_ranges` (calibrator "streamed"), handed to `quantize_static` as its calibration
    cache, so the quantiser is onnxruntime's own either way; "onnxruntime" lets its calibrator compute them (about
    8 GB for gfpgan_1.4), as an onnxruntime whose `quantize_static` takes no calibration cache (older releases) must."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.calibrate import save_tensors_data

    if not feeds:
        raise ValueError("static quantisation needs calibration inputs")
    excluded = output_heads(onnx.load(str(source))) if keep_heads else []
    if "calibration_cache_path" not in inspect.signature(quantize_static).parameters:
        calibrator = "onnxruntime"
    # reduce_range: 7-bit weights. On CPUs without VNNI (AVX2 only) ONNX Runtime's u8 x s8 kernels saturate with
    # 8-bit weights: FaceMesh's variant moved its landmarks 0.506 px there (over its gate), 0.352 px with 7 bits, as
    # on a VNNI CPU with 8.
    options = dict(quant_format=QuantFormat.QDQ, per_channel=per_channel, activation_type=QuantType.QUInt8,
                   weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax, nodes_to_exclude=excluded,
                   reduce_range=True)
    with _quiet(), tempfile.TemporaryDirectory(prefix="slimfuse-calibration-") as work:
        if calibrator == "streamed":
            cache = Path(work) / "ranges.json"
            save_tensors_data(activation_ranges(source, feeds), cache)
            quantize_static(str(source), str(destination), None, calibration_cache_path=str(cache), **options)
        else:
            quantize_static(str(source), str(destination), FeedReader(feeds), **options)
    weight_only = []
    if excluded:
        quantised = onnx.load(str(destination))
        weight_only = int8_weights(quantised, excluded)
        onnx.save(quantised, str(destination))
    return {"technique": "int8 static", "format": "QDQ", "weights": "int8 (7-bit range)", "activations": "uint8",
            "per_channel": per_channel, "calibration": "min-max", "calibrator": calibrator,
            "calibration_samples": len(feeds),
            "float_activations": excluded, "int8_weights_only": weight_only}


def int8_weights(model: onnx.ModelProto, node_names: Sequence[str]) -> list[str]:
    """Store the float weights of the named Conv / MatMul nodes as int8, symmetric per output channel, behind a
    DequantizeLinear (weight-only quantisation; the node still computes in float). Weights other nodes share are
    left alone. Returns the names of the nodes changed."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    added: list[onnx.NodeProto] = []
    changed = []
    for node in graph.node:
        if node.name not in node_names or node.op_type not in ("Conv", "MatMul") or len(node.input) < 2:
            continue
        weight = initializers.get(node.input[1])
        if weight is None or readers.get(weight.name) != 1 or weight.data_type != onnx.TensorProto.FLOAT:
            continue
        values = numpy_helper.to_array(weight)
        if values.ndim < 2:
            continue
        axis = 0 if node.op_type == "Conv" else values.ndim - 1
        moved = np.moveaxis(values, axis, 0).reshape(values.shape[axis], -1)
        scale = (np.abs(moved).max(axis=1) / 127.0).astype(np.float32)
        scale[scale == 0] = 1.0
        shape = [1] * values.ndim
        shape[axis] = -1
        quantised = np.clip(np.rint(values / scale.reshape(shape)), -127, 127).astype(np.int8)
        graph.initializer.remove(weight)
        graph.initializer.extend([numpy_helper.from_array(quantised, f"{weight.name}_int8"),
                                  numpy_helper.from_array(scale, f"{weight.name}_scale"),
                                  numpy_helper.from_array(np.zeros(len(scale), dtype=np.int8), f"{weight.name}_zero")])
        added.append(helper.make_node("DequantizeLinear", [f"{weight.name}_int8", f"{weight.name}_scale",
                                                           f"{weight.name}_zero"], [weight.name], axis=axis,
                                      name=f"{weight.name}_dequantize"))
        changed.append(node.name)
    if added:
        nodes = added + list(graph.node)
        del graph.node[:]
        graph.node.extend(nodes)
    return changed


def quantize_dynamic_model(source: Path, destination: Path, per_channel: bool = False) -> dict[str, object]:
    """Write the dynamic int8 variant of `source` to `destination`; returns how it was made."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet():
        quantize_dynamic(str(source), str(destination), per_channel=per_channel, weight_type=QuantType.QUInt8)
    return {"technique": "int8 dynamic", "weights": "uint8", "activations": "uint8 at run time",
            "per_channel": per_channel}


def ort_optimized_model(source: Path, destination: Path, level: OrtLevel = "basic") -> dict[str, object]:
    """Write the graph ONNX Runtime runs after its `level` rewrites (CPU provider) to `destination`."""
    import onnxruntime as ort

    levels = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED}
    options = ort.SessionOptions()
    options.graph_optimization_level = levels[level]
    options.optimized_model_filepath = str(destination)
    options.log_severity_level = QUIET_LOG_SEVERITY
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    return {"technique": "onnxruntime offline optimisation", "level": level}


def make_quantised(source: Path, technique: str, feeds: Sequence[Mapping[str, np.ndarray]] | None,
                   ort_level: OrtLevel = "basic", calibrator: Calibrator = "streamed") -> tuple[bytes, dict[str, object]]:
    """The bytes of the `technique` ("int8", "int8-dynamic", "optimized") variant of `source`, and how it was made."""
    with tempfile.TemporaryDirectory(prefix="slimfuse-quantize-") as work:
        destination = Path(work) / "variant.onnx"
        if technique == "int8":
            how = quantize_static_model(source, destination, feeds or [], calibrator=calibrator)
        elif technique == "int8-dynamic":
            how = quantize_dynamic_model(source, destination)
        elif technique == "optimized":
            how = ort_optimized_model(source, destination, ort_level)
        else:
            raise ValueError(f"unknown technique {technique!r}")
        model = onnx.load(str(destination))
        return model.SerializeToString(deterministic=True), how


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """onnxruntime.quantization prints progress on stdout and logs warnings; keep the command's output clean."""
    import logging

    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)

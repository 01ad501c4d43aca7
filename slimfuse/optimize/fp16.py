"""float16 variants of ONNX models: fp16 weights and compute, float32 inputs and outputs.

Every node computes in float16 except the ones kept in float32:
- numerically sensitive operations (`SENSITIVE_OPS`: normalisations, softmax, reductions, exp / log / pow,
  resize): their sums, squares and exponentials overflow float16's range (65504) or lose its few digits;
- operations ONNX defines only for float32 here (`FLOAT32_ONLY_OPS`) and operations of other domains;
- any operation type or node name the caller lists (`keep`, the command's `--keep-fp32`);
- with `ranges` (the largest magnitude of each tensor measured in float32 on calibration inputs, see
  `tensor_ranges`): every node that reads or writes a value beyond `FP16_SAFE`;
- nodes that read a small constant (an epsilon, a scale) that float16 cannot hold.

A Cast is put wherever a float tensor crosses between the two precisions (one per tensor and direction, shared
by its readers); graph inputs stay float32 and float32 graph outputs are cast back from float16 under their own
names. An initializer read only by float32 nodes stays float32; one read by both keeps its float32 copy and gains
a float16 one (`NAME_fp16`, placed right after it, so the graph's last initializer stays last). The output bytes
depend only on the input model and the options.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from slimfuse.models.runtime import QUIET_LOG_SEVERITY
from onnx import TensorProto, helper, numpy_helper

SENSITIVE_OPS: frozenset[str] = frozenset({
    # normalisations
    "BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization", "LpNormalization",
    "MeanVarianceNormalization", "RMSNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization",
    # softmax
    "Softmax", "LogSoftmax",
    # reductions
    "ReduceSum", "ReduceMean", "ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceMax", "ReduceMin", "CumSum", "GlobalAveragePool", "GlobalLpPool", "LpPool", "Einsum",
    # exponentials and powers
    "Exp", "Log", "Pow",
    # resampling
    "Resize", "Upsample",
})
"""Operations kept in float32 by default."""

FLOAT32_ONLY_OPS: frozenset[str] = frozenset({
    "Range", "NonMaxSuppression", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
    "Multinomial", "ConstantOfShape",
})
"""Operations whose float tensors ONNX Runtime does not take in float16 (kept, with Casts around them)."""

FIXED_FLOAT32_INPUTS: dict[str, frozenset[int]] = {"Resize": frozenset({2}), "Upsample": frozenset({1})}
"""Inputs that are float32 whatever the node computes in (Resize's and Upsample's scales)."""

FP16_MAX = 65504.0
FP16_SAFE = FP16_MAX / 16
"""A tensor whose measured magnitude exceeds this is kept in float32 (headroom for inputs beyond the calibration
set's)."""
RANGE_FEEDS = 6
"""Calibration inputs the ranges are measured on (with FP16_SAFE's headroom, a few are enough)."""
RANGE_CHUNK = 96
"""Intermediate tensors read per run when measuring ranges."""
SMALL_CONSTANT = 16
"""Constants with at most this many values are epsilons and scales: one that float16 would turn into 0 (or inf)
keeps its readers in float32. Larger weights may lose their tiniest values to 0 without harm."""

_FLOAT, _HALF = TensorProto.FLOAT, TensorProto.FLOAT16
_SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})


class Float16Error(ValueError):
    """The model cannot be converted (control flow, or a file that is not a plain float32 graph)."""


@dataclass(frozen=True)
class Float16Report:
    """What the conversion kept in float32, by reason, for the variant's sidecar."""

    converted_nodes: int
    kept_nodes: int
    kept_by_reason: tuple[tuple[str, int], ...]
    casts_added: int
    initializers_fp16: int
    initializers_fp32: int

    def to_dict(self) -> dict[str, object]:
        return {"converted_nodes": self.converted_nodes, "kept_nodes": self.kept_nodes,
                "kept_by_reason": dict(self.kept_by_reason), "casts_added": self.casts_added,
                "initializers_fp16": self.initializers_fp16, "initializers_fp32": self.initializers_fp32}


def convert_float16(model: onnx.ModelProto, keep: Iterable[str] = (), sensitive: Iterable[str] = SENSITIVE_OPS,
                    ranges: Mapping[str, float] | None = None) -> tuple[onnx.ModelProto, Float16Report]:
    """The float16 variant of `model` (not modified) and what was kept in float32.

    keep: operation types or node names also kept in float32. sensitive: the operation types kept by default
    (an empty set converts every node it can, which is what a naive conversion does). ranges: the largest
    magnitude of tensors measured in float32 (see `tensor_ranges`); nodes touching larger values are kept."""
    work = onnx.ModelProto()
    work.CopyFrom(model)
    graph = work.graph
    if any(node.op_type in _SUBGRAPH_OPS for node in graph.node):
        raise Float16Error("models with control flow (If, Loop, Scan) are not supported")
    _constants_to_initializers(graph)
    floats = _float_tensors(work)
    graph_inputs = {value.name for value in graph.input}
    initializers = {init.name: init for init in graph.initializer if init.name not in graph_inputs}
    kept = _kept_nodes(graph, floats, initializers, set(keep), frozenset(sensitive), ranges or {})
    converter = _Converter(graph, floats, initializers, kept)
    converter.run()
    del graph.value_info[:]  # intermediate types changed; ONNX Runtime infers them again
    _set_metadata(work, kept)
    onnx.checker.check_model(work)
    reasons: dict[str, int] = {}
    for reason in kept.values():
        reasons[reason] = reasons.get(reason, 0) + 1
    report = Float16Report(
        converted_nodes=converter.converted, kept_nodes=len(kept), kept_by_reason=tuple(sorted(reasons.items())),
        casts_added=converter.casts_added,
        initializers_fp16=sum(1 for init in graph.initializer if init.data_type == _HALF),
        initializers_fp32=sum(1 for init in graph.initializer if init.data_type == _FLOAT))
    return work, report


def tensor_ranges(model: onnx.ModelProto, feeds: Sequence[Mapping[str, np.ndarray]], max_feeds: int = RANGE_FEEDS,
                  chunk: int = RANGE_CHUNK) -> dict[str, float]:
    """The largest finite magnitude of every float tensor of `model` over (the first `max_feeds` of) `feeds`, run in
    float32 on the CPU. Intermediate tensors are read `chunk` at a time, so a large generator's activations are
    never all held at once."""
    import onnxruntime as ort

    feeds = list(feeds)[:max_feeds]
    floats = _float_tensors(model)
    present = {value.name for value in model.graph.output}
    names = [name for node in model.graph.node for name in node.output if name and name in floats and name not in present]
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # keep every tensor
    options.log_severity_level = QUIET_LOG_SEVERITY
    found: dict[str, float] = {}
    for start in range(0, max(len(names), 1), chunk):
        exposed = onnx.ModelProto()
        exposed.CopyFrom(model)
        exposed.graph.output.extend(helper.make_tensor_value_info(name, _FLOAT, None)
                                    for name in names[start:start + chunk])
        session = ort.InferenceSession(exposed.SerializeToString(), options, providers=["CPUExecutionProvider"])
        outputs = [output.name for output in session.get_outputs()]
        for feed in feeds:
            for name, value in zip(outputs, session.run(None, dict(feed)), strict=True):
                _note_peak(found, name, value)
    for feed in feeds:
        for name, value in feed.items():
            _note_peak(found, name, value)
    return found


def _note_peak(found: dict[str, float], name: str, value: np.ndarray) -> None:
    array = np.asarray(value)
    if array.dtype.kind != "f" or array.size == 0:
        return
    finite = np.abs(array[np.isfinite(array)])
    found[name] = max(found.get(name, 0.0), float(finite.max()) if finite.size else 0.0)


def _constants_to_initializers(graph: onnx.GraphProto) -> None:
    """Float Constant nodes become initializers (placed first), so one rule decides every constant's precision."""
    moved: list[onnx.TensorProto] = []
    remaining: list[onnx.NodeProto] = []
    for node in graph.node:
        tensor = _constant_value(node) if node.op_type == "Constant" and node.domain in ("", "ai.onnx") else None
        if tensor is None:
            remaining.append(node)
            continue
        tensor.name = node.output[0]
        moved.append(tensor)
    if not moved:
        return
    existing = list(graph.initializer)
    del graph.initializer[:]
    graph.initializer.extend(moved + existing)
    del graph.node[:]
    graph.node.extend(remaining)


def _constant_value(node: onnx.NodeProto) -> onnx.TensorProto | None:
    for attribute in node.attribute:
        if attribute.name == "value" and attribute.t.data_type == _FLOAT:
            copy = onnx.TensorProto()
            copy.CopyFrom(attribute.t)
            return copy
        if attribute.name == "value_float":
            return numpy_helper.from_array(np.array(attribute.f, dtype=np.float32))
        if attribute.name == "value_floats":
            return numpy_helper.from_array(np.array(list(attribute.floats), dtype=np.float32))
    return None


def _float_tensors(model: onnx.ModelProto) -> set[str]:
    """Names of the graph's float32 tensors (inputs, initializers, node outputs), by ONNX's type inference; an
    output it cannot type is taken as float when its node reads a float."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception as exc:  # noqa: BLE001 - onnx raises several types for a malformed graph
        raise Float16Error(f"ONNX type inference failed: {exc}") from exc
    graph = inferred.graph
    types: dict[str, int] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type:
            types[value.name] = value.type.tensor_type.elem_type
    for init in graph.initializer:
        types[init.name] = init.data_type
    for node in model.graph.node:
        reads_float = any(types.get(name) == _FLOAT for name in node.input)
        for name in node.output:
            if name and name not in types and reads_float and node.op_type not in ("Shape", "Size"):
                types[name] = _FLOAT
    return {name for name, elem in types.items() if elem == _FLOAT}


def _kept_nodes(graph: onnx.GraphProto, floats: set[str], initializers: Mapping[str, onnx.TensorProto],
                keep: set[str], sensitive: frozenset[str], ranges: Mapping[str, float]) -> dict[int, str]:
    """Index -> why, for every node that computes in float32."""
    unsafe = {name for name, init in initializers.items() if init.data_type == _FLOAT and not _fits_half(init)}
    kept: dict[int, str] = {}
    for index, node in enumerate(graph.node):
        touched = [name for name in (*node.input, *node.output) if name in floats]
        if node.op_type in keep or (node.name and node.name in keep):
            kept[index] = "listed"
        elif node.op_type in sensitive:
            kept[index] = "sensitive"
        elif node.op_type in FLOAT32_ONLY_OPS or node.domain not in ("", "ai.onnx"):
            kept[index] = "float32-only"
        elif any(name in unsafe for name in node.input):
            kept[index] = "small-or-large-constant"
        elif any(ranges.get(name, 0.0) > FP16_SAFE for name in touched):
            kept[index] = "range"
    return kept


def _fits_half(init: onnx.TensorProto) -> bool:
    values = numpy_helper.to_array(init)
    finite = values[np.isfinite(values)]
    if finite.size and float(np.abs(finite).max()) > FP16_MAX:
        return False
    if values.size <= SMALL_CONSTANT:
        half = values.astype(np.float16)
        if np.any((half == 0) & (values != 0)):
            return False
    return True


class _Converter:
    """Rewrites the graph in place: node precisions, Casts at the crossings, initializer copies."""

    def __init__(self, graph: onnx.GraphProto, floats: set[str], initializers: Mapping[str, onnx.TensorProto],
                 kept: Mapping[int, str]) -> None:
        self.graph = graph
        self.floats = floats
        self.initializers = initializers
        self.kept = kept
        self.produced: dict[str, int] = {value.name: _FLOAT for value in graph.input if value.name in floats}
        self.casts: dict[tuple[str, int], str] = {}
        self.casts_added = 0
        self.converted = 0
        self.needs: dict[str, set[int]] = {}
        self.half_names: dict[str, str] = {}
        self.names = {name for node in graph.node for name in (*node.input, *node.output)}
        self.names |= {init.name for init in graph.initializer} | {value.name for value in graph.input}

    def unique(self, wanted: str) -> str:
        name = wanted
        while name in self.names:
            name += "_"
        self.names.add(name)
        return name

    def run(self) -> None:
        graph = self.graph
        outputs = {value.name for value in graph.output}
        nodes = list(graph.node)
        renamed = self._rename_half_outputs(nodes, outputs)
        new_nodes: list[onnx.NodeProto] = []
        for index, node in enumerate(nodes):
            precision = _FLOAT if index in self.kept else _HALF
            fixed = FIXED_FLOAT32_INPUTS.get(node.op_type, frozenset())
            for position, name in enumerate(node.input):
                if not name or name not in self.floats:
                    continue
                wanted = _FLOAT if position in fixed else precision
                if name in self.initializers:
                    self.needs.setdefault(name, set()).add(wanted)
                    if wanted == _HALF:
                        node.input[position] = self._half_initializer_name(name)
                    continue
                have = self.produced.get(name, _FLOAT)
                if have != wanted:
                    node.input[position] = self._cast(name, wanted, new_nodes)
            if precision == _HALF and _reads_or_writes_float(node, self.floats):
                self.converted += 1
                if node.op_type == "Cast":
                    for attribute in node.attribute:
                        if attribute.name == "to" and attribute.i == _FLOAT:
                            attribute.i = _HALF
            for name in node.output:
                if name and name in self.floats:
                    self.produced[name] = precision
            new_nodes.append(node)
        for original, half_name in renamed.items():
            new_nodes.append(helper.make_node("Cast", [half_name], [original], name=self.unique(f"{original}_to_fp32"),
                                              to=_FLOAT))
            self.casts_added += 1
        for value in graph.output:  # an initializer that is also a graph output keeps its float32 copy
            if value.name in self.initializers and _HALF in self.needs.get(value.name, set()):
                self.needs[value.name].add(_FLOAT)
        del graph.node[:]
        graph.node.extend(new_nodes)
        self._write_initializers()

    def _rename_half_outputs(self, nodes: list[onnx.NodeProto], outputs: set[str]) -> dict[str, str]:
        """Float graph outputs written by float16 nodes are renamed NAME_fp16 (and cast back to NAME at the end)."""
        renamed: dict[str, str] = {}
        for index, node in enumerate(nodes):
            if index in self.kept:
                continue
            for position, name in enumerate(node.output):
                if name in outputs and name in self.floats:
                    renamed[name] = self.unique(f"{name}_fp16")
                    node.output[position] = renamed[name]
                    self.floats.add(renamed[name])
        if renamed:
            for node in nodes:
                for position, name in enumerate(node.input):
                    if name in renamed:
                        node.input[position] = renamed[name]
        return renamed

    def _cast(self, name: str, to: int, new_nodes: list[onnx.NodeProto]) -> str:
        key = (name, to)
        if key not in self.casts:
            suffix = "fp16" if to == _HALF else "fp32"
            cast_name = self.unique(f"{name}_cast_{suffix}")
            self.casts[key] = cast_name
            self.casts_added += 1
            new_nodes.append(helper.make_node("Cast", [name], [cast_name], name=cast_name, to=to))
        return self.casts[key]

    def _half_initializer_name(self, name: str) -> str:
        if name not in self.half_names:
            self.half_names[name] = self.unique(f"{name}_fp16")
        return self.half_names[name]

    def _write_initializers(self) -> None:
        graph = self.graph
        result: list[onnx.TensorProto] = []
        renames: dict[str, str] = {}
        for init in graph.initializer:
            needs = self.needs.get(init.name, set())
            if init.name not in self.initializers or init.data_type != _FLOAT or _HALF not in needs:
                result.append(init)
                continue
            half_name = self.half_names[init.name]
            half = numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), half_name)
            if _FLOAT in needs:
                result.extend([init, half])
                continue
            # Only float16 readers: the one copy is float16 under the original name.
            half.name = init.name
            result.append(half)
            renames[half_name] = init.name
        for node in graph.node:
            for position, name in enumerate(node.input):
                if name in renames:
                    node.input[position] = renames[name]
        del graph.initializer[:]
        graph.initializer.extend(result)


def _reads_or_writes_float(node: onnx.NodeProto, floats: set[str]) -> bool:
    return any(name in floats for name in (*node.input, *node.output) if name)


def _set_metadata(model: onnx.ModelProto, kept: Mapping[int, str]) -> None:
    entry = model.metadata_props.add()
    entry.key = "slimfuse.optimize"
    entry.value = f"fp16; {len(kept)} nodes kept in float32"

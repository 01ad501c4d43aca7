"""Stand-in ONNX models for tests without the real weights, built with onnx.helper.

Each has exactly the input and output names and shapes of its catalog entry (slimfuse.models.neural), so the
same code paths run as with the real files: an identity swapper that gives back its target, an inswapper-shaped
graph whose last initializer is a 512 x 512 emap, an identity enhancer, a CodeFormer with its `weight` input, a
recogniser that returns a fixed projection of its input, and an embedding converter.

`free_batch=True` turns every leading 1 into a named axis, for the batched code paths.
"""
from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from slimfuse.models.catalog import Catalog
from slimfuse.models.spec import ModelSpec, TensorSpec
from slimfuse.models.store import Store

OPSET = 17
IR_VERSION = 8
ELEMENT = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16}


def spec_of(name: str) -> ModelSpec:
    return Catalog().get(name)


def _value(tensor: TensorSpec, free_batch: bool) -> onnx.ValueInfoProto:
    shape: list[int | str] = list(tensor.shape)
    if free_batch and shape and shape[0] == 1:
        shape[0] = "batch"
    return helper.make_tensor_value_info(tensor.name, ELEMENT[tensor.dtype], shape)


def _model(spec: ModelSpec, nodes: Sequence[onnx.NodeProto], initializers: Sequence[onnx.TensorProto],
           free_batch: bool, inputs: Sequence[TensorSpec] | None = None) -> onnx.ModelProto:
    assert spec.io is not None
    graph = helper.make_graph(
        list(nodes), f"standin_{spec.name}",
        [_value(t, free_batch) for t in (inputs if inputs is not None else spec.io.inputs)],
        [_value(t, free_batch) for t in spec.io.outputs],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="slimfuse-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def _const(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def _pixel_identity(spec: ModelSpec, source: str, output: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes mapping the normalised image `source` back to the pixels it came from, in the output's range:
    y = ((x * std + mean) * (high - low) + low), per channel."""
    assert spec.io is not None
    low, high = spec.io.output_range
    std, mean = np.asarray(spec.io.std), np.asarray(spec.io.mean)
    scale = (std * (high - low)).reshape(1, 3, 1, 1)
    shift = (mean * (high - low) + low).reshape(1, 3, 1, 1)
    nodes = [helper.make_node("Mul", [source, "standin_scale"], ["standin_scaled"]),
             helper.make_node("Add", ["standin_scaled", "standin_shift"], [output])]
    return nodes, [_const("standin_scale", scale), _const("standin_shift", shift)]


def identity_swapper(name: str, free_batch: bool = False, target_size: int | None = None) -> onnx.ModelProto:
    """A swapper that gives back its target. target_size: a wrong input size, for the shape check."""
    spec = spec_of(name)
    assert spec.io is not None
    nodes, inits = _pixel_identity(spec, "target", spec.io.outputs[0].name)
    if len(spec.io.outputs) > 1:  # hyperswap's mask: ones of [N, 1, S, S]
        nodes += [helper.make_node("ReduceMean", ["target"], ["standin_mean"], axes=[1], keepdims=1),
                  helper.make_node("Mul", ["standin_mean", "standin_zero"], ["standin_zeros"]),
                  helper.make_node("Add", ["standin_zeros", "standin_one"], [spec.io.outputs[1].name])]
        inits += [_const("standin_zero", np.zeros(1)), _const("standin_one", np.ones(1))]
    inputs = None
    if target_size is not None:
        inputs = [TensorSpec("target", (1, 3, target_size, target_size)), *spec.io.inputs[1:]]
    return _model(spec, nodes, inits, free_batch, inputs)


def inswapper(name: str = "inswapper_128", emap: np.ndarray | None = None, free_batch: bool = False,
              seed: int = 4) -> onnx.ModelProto:
    """An inswapper-shaped identity swapper: a few initializers of its own, then the 512 x 512 emap last."""
    spec = spec_of(name)
    assert spec.io is not None
    if emap is None:
        emap = np.random.default_rng(seed).normal(0.0, 1.0 / np.sqrt(512), (512, 512)).astype(np.float32)
    nodes, inits = _pixel_identity(spec, "target", spec.io.outputs[0].name)
    inits.append(_const("emap", emap))
    return _model(spec, nodes, inits, free_batch)


def identity_enhancer(name: str = "gfpgan_1.4", free_batch: bool = False) -> onnx.ModelProto:
    spec = spec_of(name)
    assert spec.io is not None
    nodes = [helper.make_node("Identity", ["input"], [spec.io.outputs[0].name])]
    if any(t.name == "weight" for t in spec.io.inputs):  # CodeFormer: output = input + (weight - 0.5)
        nodes = [helper.make_node("Cast", ["weight"], ["standin_weight"], to=TensorProto.FLOAT),
                 helper.make_node("Sub", ["standin_weight", "standin_half"], ["standin_offset"]),
                 helper.make_node("Add", ["input", "standin_offset"], [spec.io.outputs[0].name])]
        return _model(spec, nodes, [_const("standin_half", np.full(1, 0.5))], free_batch)
    return _model(spec, nodes, [], free_batch)


def projection_matrix(rows: int, columns: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 1.0, (rows, columns)).astype(np.float32)


RECOGNIZER_POOL = 8


def recognizer(name: str = "arcface_w600k_r50", free_batch: bool = False, seed: int = 7) -> onnx.ModelProto:
    """Returns a fixed projection of its input: 8 x 8 average pooling, flattened, times a fixed matrix."""
    spec = spec_of(name)
    assert spec.io is not None
    size = spec.io.inputs[0].shape[-1]
    assert isinstance(size, int)
    pooled = 3 * (size // RECOGNIZER_POOL) ** 2
    weights = projection_matrix(pooled, 512, seed)
    nodes = [
        helper.make_node("AveragePool", ["input"], ["standin_pooled"], kernel_shape=[RECOGNIZER_POOL] * 2,
                         strides=[RECOGNIZER_POOL] * 2),
        helper.make_node("Flatten", ["standin_pooled"], ["standin_flat"], axis=1),
        helper.make_node("MatMul", ["standin_flat", "standin_projection"], [spec.io.outputs[0].name]),
    ]
    return _model(spec, nodes, [_const("standin_projection", weights)], free_batch)


def recognizer_reference(tensor: np.ndarray, seed: int = 7) -> np.ndarray:
    """What `recognizer` computes, in numpy: for checking the normalisation numerically."""
    n, c, h, w = tensor.shape
    k = RECOGNIZER_POOL
    pooled = tensor.reshape(n, c, h // k, k, w // k, k).mean(axis=(3, 5)).reshape(n, -1)
    return pooled @ projection_matrix(pooled.shape[1], 512, seed)


def converter(name: str, seed: int = 11) -> onnx.ModelProto:
    """An embedding converter: a fixed 512 x 512 linear map."""
    spec = spec_of(name)
    nodes = [helper.make_node("MatMul", ["input", "standin_map"], ["output"])]
    return _model(spec, nodes, [_const("standin_map", converter_matrix(seed))], False)


def converter_matrix(seed: int = 11) -> np.ndarray:
    return projection_matrix(512, 512, seed) / np.float32(np.sqrt(512))


def padded(model: onnx.ModelProto, extra_bytes: int) -> onnx.ModelProto:
    """The model with an unused initializer of `extra_bytes` (a bigger file, for the pool's byte budget)."""
    bigger = onnx.ModelProto()
    bigger.CopyFrom(model)
    bigger.graph.initializer.insert(0, _const("standin_padding", np.zeros(max(extra_bytes // 4, 1))))
    return bigger


def save(model: onnx.ModelProto, folder: Path, name: str) -> Path:
    """Write the stand-in where a user would place the real file: FOLDER/<catalog file name>."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / spec_of(name).filename
    onnx.save(model, str(path))
    return path


def isolated_store(home: Path, real: Store, models_dir: Path | None = None, notify=None) -> Store:  # type: ignore[no-untyped-def]
    """A store in `home` that shares the real store's embedded (pinned) model files through links, so tests of
    trust-on-first-use records never touch the user's own store."""
    (home / "models").mkdir(parents=True, exist_ok=True)
    for spec in real.catalog.models:
        if spec.sha256 is None:
            continue
        source = real.path(spec.name)
        link = home / "models" / spec.filename
        if source.exists() and not link.exists():
            try:
                link.symlink_to(source)
            except OSError:
                shutil.copyfile(source, link)
    return Store(home=home, models_dir=models_dir, notify=notify or (lambda message: None))


def place_standins(folder: Path, free_batch: bool = False) -> Path:
    """Every swapper, converter, enhancer and the recogniser of the catalog as stand-ins in `folder`."""
    from slimfuse.models.neural import enhancers, recognizers, swappers

    for name in swappers.SWAPPER_NAMES:
        model = inswapper(name, free_batch=free_batch) if swappers.RECIPES[name].source == "emap" else \
            identity_swapper(name, free_batch=free_batch)
        save(model, folder, name)
    for name in ("crossface_simswap", "crossface_ghost"):
        save(converter(name), folder, name)
    for name in enhancers.ENHANCER_NAMES:
        save(identity_enhancer(name, free_batch=free_batch), folder, name)
    for spec in recognizers.MODELS:
        save(recognizer(spec.name, free_batch=free_batch), folder, spec.name)
    return folder

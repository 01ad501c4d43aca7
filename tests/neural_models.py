"""Stand-in ONNX models for tests without the real weights, built with onnx.helper.

Each has exactly the input and output names and shapes of its catalog entry (slimfuse.models.neural), so the same
code paths run as with the real files: an identity swapper that gives back its target (with `source_tint`, plus a
tint per channel computed from the source it is fed, `tint_of`, so a test sees which source reached the model), an
inswapper-shaped graph whose last initializer is a 512 x 512 emap, an identity enhancer, a CodeFormer with its
`weight` input, a recognizer that returns a fixed projection of its input, and an embedding converter; detectors
whose outputs are planted faces (`planted_detector`), occluders and face parsers with a known answer (`occluder`,
`face_parser`), and super-resolution stand-ins that resize (`resize_enhancer`).

`free_batch=True` turns every leading 1 into a named axis, for the batched code paths.
"""
from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.masks import IMAGENET_MEAN, IMAGENET_STD
from slimfuse.models.runtime import SessionSettings, create_session
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


def graph_model(name: str, nodes: Sequence[onnx.NodeProto], inputs: Sequence[onnx.ValueInfoProto],
                outputs: Sequence[onnx.ValueInfoProto],
                initializers: Sequence[onnx.TensorProto] = ()) -> onnx.ModelProto:
    """A checked model of one graph, at the opset and IR version every stand-in uses."""
    graph = helper.make_graph(list(nodes), f"standin_{name}", list(inputs), list(outputs),
                              initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="slimfuse-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def image_model(name: str, op: str, constant: float | None = None) -> onnx.ModelProto:
    """A model of `name`'s catalog signature (one image in, one of the same shape out) made of a single `op` on its
    input (with `constant` as its second operand: Mul by 0.9, say)."""
    spec = spec_of(name)
    assert spec.io is not None
    tensor = spec.io.inputs[0]
    value = helper.make_tensor_value_info(tensor.name, TensorProto.FLOAT, list(tensor.shape))
    out = helper.make_tensor_value_info(spec.io.outputs[0].name, TensorProto.FLOAT, list(tensor.shape))
    operands = [tensor.name] if constant is None else [tensor.name, "constant"]
    inits = [] if constant is None else [numpy_helper.from_array(np.array(constant, np.float32), "constant")]
    return graph_model(name, [helper.make_node(op, operands, [out.name])], [value], [out], inits)


def _model(spec: ModelSpec, nodes: Sequence[onnx.NodeProto], initializers: Sequence[onnx.TensorProto],
           free_batch: bool, inputs: Sequence[TensorSpec] | None = None) -> onnx.ModelProto:
    assert spec.io is not None
    return graph_model(spec.name, nodes,
                       [_value(t, free_batch) for t in (inputs if inputs is not None else spec.io.inputs)],
                       [_value(t, free_batch) for t in spec.io.outputs], initializers)


def _const(name: str, values: np.ndarray | float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def _pixel_identity(spec: ModelSpec, source: str, output: str,
                    invert: bool = False) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes mapping the normalised image `source` back to the pixels it came from, in the output's range:
    y = ((x * std + mean) * (high - low) + low), per channel; invert: the negative image, high + low - y."""
    assert spec.io is not None
    low, high = spec.io.output_range
    std, mean = np.asarray(spec.io.std), np.asarray(spec.io.mean)
    scale = (std * (high - low)).reshape(1, 3, 1, 1)
    shift = (mean * (high - low) + low).reshape(1, 3, 1, 1)
    if invert:
        scale, shift = -scale, high + low - shift
    nodes = [helper.make_node("Mul", [source, "standin_scale"], ["standin_scaled"]),
             helper.make_node("Add", ["standin_scaled", "standin_shift"], [output])]
    return nodes, [_const("standin_scale", scale), _const("standin_shift", shift)]


def identity_swapper(name: str, free_batch: bool = False, target_size: int | None = None,
                     invert: bool = False, source_tint: float = 0.0) -> onnx.ModelProto:
    """A swapper that gives back its target (invert: the target's negative, a swap that shows). target_size: a
    wrong input size, for the shape check. source_tint: plus a tint that depends on the source (`tint_of`)."""
    spec = spec_of(name)
    assert spec.io is not None
    nodes, inits = _swapper_nodes(spec, invert, source_tint)
    if len(spec.io.outputs) > 1:  # hyperswap's mask: ones of [N, 1, S, S]
        nodes += [helper.make_node("ReduceMean", ["target"], ["standin_mean"], axes=[1], keepdims=1),
                  helper.make_node("Mul", ["standin_mean", "standin_zero"], ["standin_zeros"]),
                  helper.make_node("Add", ["standin_zeros", "standin_one"], [spec.io.outputs[1].name])]
        inits += [_const("standin_zero", np.zeros(1)), _const("standin_one", np.ones(1))]
    inputs = None
    if target_size is not None:
        inputs = [TensorSpec("target", (1, 3, target_size, target_size)), *spec.io.inputs[1:]]
    return _model(spec, nodes, inits, free_batch, inputs)


TINT_SEED = 13


def tint_directions() -> np.ndarray:
    """512 x 3: the unit directions whose projections of an identity vector become the R, G, B tint."""
    directions = projection_matrix(512, 3, TINT_SEED)
    return directions / np.linalg.norm(directions, axis=0, keepdims=True)


def tint_of(source: np.ndarray, scale: float) -> np.ndarray:
    """[N, 3]: what a source-tint stand-in adds to each channel of its output (in the output's range): `scale`
    times the projections of the source vector's direction on `tint_directions()`, or for a source picture
    `scale` times its mean per channel less 0.5."""
    source = np.asarray(source, dtype=np.float64)
    if source.ndim == 4:
        return scale * (source.mean(axis=(2, 3)) - 0.5)
    return scale * (source / np.linalg.norm(source, axis=1, keepdims=True)) @ tint_directions()


def _swapper_nodes(spec: ModelSpec, invert: bool,
                   source_tint: float) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """The target back as pixels (`_pixel_identity`), plus `tint_of(source, source_tint)` when that is not 0."""
    assert spec.io is not None
    output = spec.io.outputs[0].name
    if not source_tint:
        return _pixel_identity(spec, "target", output, invert)
    nodes, inits = _pixel_identity(spec, "target", "standin_identity", invert)
    if len(spec.io.inputs[1].shape) == 4:  # a source picture: its mean per channel, less a half
        nodes += [helper.make_node("ReduceMean", ["source"], ["standin_means"], axes=[2, 3], keepdims=1),
                  helper.make_node("Sub", ["standin_means", "standin_half"], ["standin_projected"])]
        inits.append(_const("standin_half", 0.5))
    else:  # a vector: its direction, projected
        nodes += [helper.make_node("ReduceL2", ["source"], ["standin_norm"], axes=[1], keepdims=1),
                  helper.make_node("Div", ["source", "standin_norm"], ["standin_direction"]),
                  helper.make_node("MatMul", ["standin_direction", "standin_directions"], ["standin_flat_tint"]),
                  helper.make_node("Reshape", ["standin_flat_tint", "standin_tint_shape"], ["standin_projected"])]
        inits += [_const("standin_directions", tint_directions()), _ints("standin_tint_shape", [-1, 3, 1, 1])]
    nodes += [helper.make_node("Mul", ["standin_projected", "standin_tint_scale"], ["standin_tint"]),
              helper.make_node("Add", ["standin_identity", "standin_tint"], [output])]
    inits.append(_const("standin_tint_scale", source_tint))
    return nodes, inits


def inswapper(name: str = "inswapper_128", emap: np.ndarray | None = None, free_batch: bool = False,
              seed: int = 4, source_tint: float = 0.0) -> onnx.ModelProto:
    """An inswapper-shaped identity swapper: a few initializers of its own, then the 512 x 512 emap last."""
    spec = spec_of(name)
    assert spec.io is not None
    if emap is None:
        emap = np.random.default_rng(seed).normal(0.0, 1.0 / np.sqrt(512), (512, 512)).astype(np.float32)
    nodes, inits = _swapper_nodes(spec, False, source_tint)
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


def place_standins(folder: Path, free_batch: bool = False, source_tint: float = 0.0) -> Path:
    """Every swapper, converter, enhancer and the recognizer of the catalog as stand-ins in `folder` (the swappers
    with a source tint of `source_tint`)."""
    from slimfuse.models.neural import enhancers, recognizers, swappers

    for name in swappers.SWAPPER_NAMES:
        model = inswapper(name, free_batch=free_batch, source_tint=source_tint) \
            if swappers.RECIPES[name].source == "emap" else \
            identity_swapper(name, free_batch=free_batch, source_tint=source_tint)
        save(model, folder, name)
    for name in ("crossface_simswap", "crossface_ghost", "crossface_hififace"):
        save(converter(name), folder, name)
    for name in enhancers.ENHANCER_NAMES:
        save(identity_enhancer(name, free_batch=free_batch), folder, name)
    for spec in recognizers.MODELS:
        save(recognizer(spec.name, free_batch=free_batch), folder, spec.name)
    return folder


def session_of(model: onnx.ModelProto, folder: Path, stem: str) -> ort.InferenceSession:
    """An ONNX Runtime session (CPU) of `model`, written to FOLDER/STEM.onnx."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.onnx"
    onnx.save(model, str(path))
    return create_session(path, SessionSettings())


def _ints(name: str, values: Sequence[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


# Neural detectors. A planted face: (stride, row, col, score, box as x0 y0 x1 y1, 5 points), in the pixels of the
# model's 640 px letterboxed input; the face is planted at that anchor, the rest of the output says "no face".
DETECTOR_SIZE = 640
DETECTOR_STRIDES = (8, 16, 32)
Plant = tuple[int, int, int, float, Sequence[float], Sequence[Sequence[float]]]


def detector_cells(stride: int) -> int:
    return DETECTOR_SIZE // stride


def scrfd_outputs(plants: Sequence[Plant]) -> list[np.ndarray]:
    """SCRFD / RetinaFace outputs (scores x3, box distances x3, keypoint offsets x3) holding the planted faces."""
    cells = [detector_cells(s) ** 2 * 2 for s in DETECTOR_STRIDES]
    scores = [np.zeros((n, 1)) for n in cells]
    boxes = [np.ones((n, 4)) for n in cells]
    points = [np.zeros((n, 10)) for n in cells]
    for stride, row, col, score, box, kps in plants:
        level, anchor = DETECTOR_STRIDES.index(stride), np.array([col * stride, row * stride], dtype=np.float64)
        index = (row * detector_cells(stride) + col) * 2 + 1  # the second anchor of the cell
        scores[level][index] = score
        boxes[level][index] = np.concatenate([anchor - np.asarray(box[:2]), np.asarray(box[2:]) - anchor]) / stride
        points[level][index] = ((np.asarray(kps) - anchor) / stride).reshape(-1)
    return scores + boxes + points


def yunet_outputs(plants: Sequence[Plant]) -> list[np.ndarray]:
    """YuNet outputs (cls x3, obj x3, bbox x3, kps x3) holding the planted faces."""
    cells = [detector_cells(s) ** 2 for s in DETECTOR_STRIDES]
    cls = [np.zeros((1, n, 1)) for n in cells]
    obj = [np.zeros((1, n, 1)) for n in cells]
    boxes = [np.zeros((1, n, 4)) for n in cells]
    points = [np.zeros((1, n, 10)) for n in cells]
    for stride, row, col, score, box, kps in plants:
        level, anchor = DETECTOR_STRIDES.index(stride), np.array([col * stride, row * stride], dtype=np.float64)
        index = row * detector_cells(stride) + col
        cls[level][0, index], obj[level][0, index] = 1.0, score  # the score is cls x obj
        centre, size = (np.asarray(box[:2]) + box[2:]) / 2, np.asarray(box[2:]) - box[:2]
        boxes[level][0, index] = np.concatenate([(centre - anchor) / stride, np.log(size / stride)])
        points[level][0, index] = ((np.asarray(kps) - anchor) / stride).reshape(-1)
    return cls + obj + boxes + points


def yolo_outputs(plants: Sequence[Plant]) -> list[np.ndarray]:
    """YOLOv8-face's one output holding the planted faces (in anchor columns 1234, 7000, ...)."""
    table = np.zeros((1, 20, sum(detector_cells(s) ** 2 for s in DETECTOR_STRIDES)))
    for column, (_, _, _, score, box, kps) in zip((1234, 7000, 8000), plants, strict=False):
        centre, size = (np.asarray(box[:2]) + box[2:]) / 2, np.asarray(box[2:]) - box[:2]
        visible = np.hstack([np.asarray(kps), np.full((5, 1), 0.9)]).reshape(-1)
        table[0, :, column] = np.concatenate([centre, size, [score], visible])
    return [table]


DETECTOR_PLANTERS = {"scrfd_2.5g": scrfd_outputs, "retinaface_10g": scrfd_outputs, "yunet": yunet_outputs,
                     "yolo_face": yolo_outputs}


def detector_graph(name: str, nodes: Sequence[onnx.NodeProto], outputs: Sequence[np.ndarray],
                   initializers: Sequence[onnx.TensorProto] = ()) -> onnx.ModelProto:
    """A model with detector `name`'s input at 640 px and its outputs (catalog order) shaped as `outputs`."""
    io = spec_of(name).io
    assert io is not None
    return graph_model(
        name, nodes,
        [helper.make_tensor_value_info(io.inputs[0].name, TensorProto.FLOAT, [1, 3, DETECTOR_SIZE, DETECTOR_SIZE])],
        [helper.make_tensor_value_info(spec.name, TensorProto.FLOAT, list(array.shape))
         for spec, array in zip(io.outputs, outputs, strict=True)],
        initializers,
    )


def constant_outputs(name: str, outputs: Sequence[np.ndarray]) -> list[onnx.NodeProto]:
    """Nodes giving detector `name`'s outputs (catalog order) as the constants `outputs`."""
    io = spec_of(name).io
    assert io is not None
    return [helper.make_node("Constant", [], [spec.name], value=numpy_helper.from_array(array.astype(np.float32)))
            for spec, array in zip(io.outputs, outputs, strict=True)]


def planted_detector(name: str, plants: Sequence[Plant]) -> onnx.ModelProto:
    """Detector `name` that finds the planted faces in whatever it is shown."""
    outputs = DETECTOR_PLANTERS[name](plants)
    return detector_graph(name, constant_outputs(name, outputs), outputs)


# Face masks: the occluder gives the crop's red channel / 255 (so the crop must go in as BGR / 255), or a fixed
# mask; the parser reads a class index from the red channel (class x 10) after undoing ImageNet's normalisation
# and returns logits peaked at that class (so the crop must go in as RGB with ImageNet's mean and std).

def mask_model(name: str, nodes: Sequence[onnx.NodeProto], initializers: Sequence[onnx.TensorProto],
               batch: int | str = "batch") -> onnx.ModelProto:
    """A model with mask model `name`'s tensors (catalog shapes, the batch axis `batch`)."""
    io = spec_of(name).io
    assert io is not None
    return graph_model(
        name, nodes,
        [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, [batch, *t.shape[1:]]) for t in io.inputs],
        [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, [batch, *t.shape[1:]]) for t in io.outputs],
        initializers,
    )


def occluder(name: str = "xseg_1", batch: int | str = "batch", visible: np.ndarray | None = None) -> onnx.ModelProto:
    """XSeg's tensors: channel 2 of its BGR input (the crop's red / 255); or, given `visible` (256 x 256), that
    fixed mask for every crop."""
    nodes = [helper.make_node("Slice", ["input", "from", "to", "axis"], ["red" if visible is not None else "output"])]
    initializers = [_ints("from", [2]), _ints("to", [3]), _ints("axis", [3])]
    if visible is not None:
        nodes += [helper.make_node("Mul", ["red", "zero"], ["zeros"]),
                  helper.make_node("Add", ["zeros", "visible"], ["output"])]
        initializers += [_const("zero", 0.0), _const("visible", np.asarray(visible).reshape(1, 256, 256, 1))]
    return mask_model(name, nodes, initializers, batch)


def face_parser(name: str = "bisenet_resnet_34") -> onnx.ModelProto:
    """BiSeNet's tensors; logits -(class - c)^2 with class = red / 10 read back from the input."""
    nodes = [
        helper.make_node("Slice", ["input", "from", "to", "axis"], ["red_normalised"]),
        helper.make_node("Mul", ["red_normalised", "std"], ["red_centred"]),
        helper.make_node("Add", ["red_centred", "mean"], ["red_unit"]),
        helper.make_node("Mul", ["red_unit", "to_class"], ["class_value"]),
        helper.make_node("Sub", ["class_value", "classes"], ["distance"]),
        helper.make_node("Mul", ["distance", "distance"], ["squared"]),
        helper.make_node("Neg", ["squared"], ["output"]),
    ]
    initializers = [_ints("from", [0]), _ints("to", [1]), _ints("axis", [1]), _const("std", IMAGENET_STD[0]),
                    _const("mean", IMAGENET_MEAN[0]), _const("to_class", 25.5),
                    _const("classes", np.arange(19).reshape(1, 19, 1, 1))]
    return mask_model(name, nodes, initializers)


def resize_enhancer(name: str = "real_esrgan_x2", blur: bool = False, batch: int | str = "batch") -> onnx.ModelProto:
    """A frame enhancer with `name`'s tensors: a bilinear resize by the model's scale (half-pixel centres),
    optionally followed by a 3x3 blur."""
    from slimfuse.models.neural.frame_enhancers import SCALES

    io, scale = spec_of(name).io, SCALES[name]
    assert io is not None
    initializers = [_const("scales", np.array([1, 1, scale, scale]))]
    resized = "resized" if blur else io.outputs[0].name
    nodes = [helper.make_node("Resize", [io.inputs[0].name, "", "scales"], [resized], mode="linear",
                              coordinate_transformation_mode="half_pixel")]
    if blur:
        kernel = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.float32) / 16
        initializers.append(_const("kernel", np.tile(kernel, (3, 1, 1, 1))))
        nodes.append(helper.make_node("Conv", ["resized", "kernel"], [io.outputs[0].name], group=3, pads=[1, 1, 1, 1]))
    return graph_model(
        name, nodes,
        [helper.make_tensor_value_info(io.inputs[0].name, TensorProto.FLOAT, [batch, 3, "height", "width"])],
        [helper.make_tensor_value_info(io.outputs[0].name, TensorProto.FLOAT, [batch, 3, None, None])],
        initializers,
    )


def zeroed_conv(model: onnx.ModelProto, index: int = 0) -> onnx.ModelProto:
    """A copy of `model` whose `index`-th Conv has all-zero weights (a deliberately broken variant)."""
    broken = onnx.ModelProto()
    broken.CopyFrom(model)
    convs = [node for node in broken.graph.node if node.op_type == "Conv"]
    weights = {init.name: init for init in broken.graph.initializer}
    weight = weights[convs[index].input[1]]
    zeros = numpy_helper.from_array(np.zeros_like(numpy_helper.to_array(weight)), weight.name)
    weight.CopyFrom(zeros)
    return broken


def fairface_by_tint() -> onnx.ModelProto:
    """A fairface stand-in whose classes follow the face's red-blue balance (its channel means after the model's
    normalisation): a face redder than blue is male, asian and 20-28; bluer than red, female, indian and 60-68 (a
    face with its red and blue channels swapped turns from one into the other)."""
    io = spec_of("fairface").io
    assert io is not None
    redder = np.array([1.0, 0.0, -1.0], np.float32)  # R - B of the per-channel means

    def head(classes: int, when_redder: int, when_bluer: int) -> np.ndarray:
        weights = np.zeros((3, classes), np.float32)
        weights[:, when_redder], weights[:, when_bluer] = redder, -redder
        return weights

    nodes = [helper.make_node("ReduceMean", [io.inputs[0].name], ["means"], axes=[2, 3], keepdims=0)]
    initializers = []
    for output, classes, when_redder, when_bluer in (("race_id", 7, 3, 5), ("gender_id", 2, 0, 1),
                                                     ("age_id", 9, 3, 7)):
        initializers.append(_const(f"{output}_weights", head(classes, when_redder, when_bluer)))
        nodes += [helper.make_node("MatMul", ["means", f"{output}_weights"], [f"{output}_logits"]),
                  helper.make_node("ArgMax", [f"{output}_logits"], [output], axis=1, keepdims=0)]
    return graph_model("fairface", nodes, [_value(io.inputs[0], False)],
                       [helper.make_tensor_value_info(tensor.name, TensorProto.INT64, list(tensor.shape))
                        for tensor in io.outputs], initializers)


MOUTH_ROWS = (62, 90)
"""The rows of wav2lip's 96 px lower face the mouth stand-in opens its mouth over (from the first, downward)."""
MOUTH_COLUMNS = (30, 66)


def mouth_lip_syncer(name: str = "wav2lip_gan_96") -> onnx.ModelProto:
    """wav2lip's tensors: gives back the whole face (`target`'s channels 3-5) with a black mouth whose height
    follows the sound: o = clip((mean of the mel window + 4) / 4, 0, 1) of MOUTH_ROWS' span, over MOUTH_COLUMNS
    (silence, all -4, closes it)."""
    spec = spec_of(name)
    assert spec.io is not None
    size = spec.io.crop_size
    assert size is not None
    top, bottom = MOUTH_ROWS
    rows = np.arange(size, dtype=np.float32).reshape(1, 1, size, 1)
    columns = np.zeros((1, 1, 1, size), np.float32)
    columns[..., MOUTH_COLUMNS[0]:MOUTH_COLUMNS[1]] = 1
    nodes = [
        helper.make_node("Slice", ["target", "face_from", "face_to", "face_axis"], ["face"]),
        helper.make_node("ReduceMean", ["source"], ["loudness"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Add", ["loudness", "four"], ["lifted"]),
        helper.make_node("Mul", ["lifted", "quarter"], ["scaled"]),
        helper.make_node("Clip", ["scaled", "zero", "one"], ["opening"]),
        helper.make_node("Mul", ["opening", "span"], ["depth"]),
        helper.make_node("Add", ["depth", "top"], ["lowest"]),
        helper.make_node("Sub", ["lowest", "rows"], ["ahead"]),
        helper.make_node("Clip", ["ahead", "zero", "one"], ["above"]),
        helper.make_node("Mul", ["above", "below_top"], ["band"]),
        helper.make_node("Mul", ["band", "columns"], ["mouth"]),
        helper.make_node("Sub", ["one", "mouth"], ["kept"]),
        helper.make_node("Mul", ["face", "kept"], [spec.io.outputs[0].name]),
    ]
    initializers = [_ints("face_from", [3]), _ints("face_to", [6]), _ints("face_axis", [1]), _const("four", 4.0),
                    _const("quarter", 0.25), _const("zero", 0.0), _const("one", 1.0),
                    _const("span", float(bottom - top)), _const("top", float(top)), _const("rows", rows),
                    _const("below_top", (rows >= top).astype(np.float32)), _const("columns", columns)]
    return _model(spec, nodes, initializers, free_batch=False)


def lowpass_voice_extractor(name: str = "kim_vocal_2", below_bin: int = 160) -> onnx.ModelProto:
    """A voice extractor's tensors: keeps the spectrum's bins below `below_bin` (6.25 Hz each: 1 kHz by default)
    and silences the rest, so a high tone (the "music") goes and a low buzz (the "voice") mostly stays."""
    spec = spec_of(name)
    assert spec.io is not None
    bins = spec.io.inputs[0].shape[2]
    assert isinstance(bins, int)
    keep = np.zeros((1, 1, bins, 1), np.float32)
    keep[:, :, :below_bin] = 1
    nodes = [helper.make_node("Mul", [spec.io.inputs[0].name, "keep"], [spec.io.outputs[0].name])]
    return _model(spec, nodes, [_const("keep", keep)], free_batch=False)

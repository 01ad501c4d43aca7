"""Parity stand-ins: seeded random-convolution graphs with each model's real tensor names, shapes and data types.

Both slimfuse (in the tests) and FaceFusion (in tools/facefusion_reference, from its own venv) load these files, so
this module needs numpy and onnx only. Unlike the test stand-ins of tests/neural_models.py, which return known
answers, these make every output pixel depend on every input channel and on its neighbourhood (two 3x3
convolutions with random weights, a random channel mix), and the swappers' output on every element of the source
identity: a wrong channel order, mean, std, template, crop size, output range or source recipe changes the output.
Weights come from numpy's PCG64 with a seed per model name, so every machine builds byte-identical files.

The contracts (input and output names, shapes, data types) are FaceFusion 3.8.1's facts, read from its processors
(`facefusion/processors/modules/*/core.py`: the names it feeds, the sizes it crops to) and, for names it does not
spell out, from the published files' signatures; they are written here independently of slimfuse's catalog, so a
wrong catalog entry shows as a load error in the parity tests.
"""
from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
HIDDEN = 8
"""Channels of the stand-ins' hidden layer."""
BLOB = 31
"""Width of the mask models' smoothing window (pixels of their input)."""
OCCLUDER_GAIN, OCCLUDER_SHIFT = 2.5, 1.0
"""The occluders' standardised logit, scaled and shifted: mostly visible (sigmoid(1) = 0.73), with patches on both
sides of the 0.5 that FaceFusion's occlusion mask cuts at."""


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: int = TensorProto.FLOAT


@dataclass(frozen=True)
class Contract:
    """One model file's signature and what the stand-in computes.

    kind: "swapper" (target image + source identity -> image), "image" (image -> image of the same size: enhancers),
    "converter" (512 -> 512), "occluder" (channels-last image -> channels-last one-channel mask), "parser" (image ->
    class logits of the same size).
    activation: the output's last op, giving its range: "sigmoid" (0..1), "tanh" (-1..1) or "none" (logits)."""

    name: str
    kind: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    activation: str = "sigmoid"
    emap: bool = False
    """inswapper: a 512 x 512 matrix as the graph's last initializer, read by no node (as in the published file)."""
    half_weights: bool = False
    """Weights stored in float16 behind Cast nodes (the _fp16 files); inputs and outputs stay float32."""


def _swapper(name: str, size: int, source: Tensor, activation: str = "sigmoid", emap: bool = False,
             half: bool = False, mask: bool = False) -> Contract:
    outputs = (Tensor("output", (1, 3, size, size)),) + ((Tensor("mask", (1, 1, size, size)),) if mask else ())
    return Contract(name, "swapper", (Tensor("target", (1, 3, size, size)), source), outputs, activation, emap, half)


EMBEDDING = Tensor("source", (1, 512))
SWAPPERS: tuple[Contract, ...] = (
    _swapper("inswapper_128", 128, EMBEDDING, emap=True),
    _swapper("inswapper_128_fp16", 128, EMBEDDING, emap=True, half=True),
    _swapper("hyperswap_1a_256", 256, EMBEDDING, "tanh", mask=True),
    _swapper("hyperswap_1b_256", 256, EMBEDDING, "tanh", mask=True),
    _swapper("hyperswap_1c_256", 256, EMBEDDING, "tanh", mask=True),
    _swapper("simswap_256", 256, EMBEDDING),
    _swapper("simswap_unofficial_512", 512, EMBEDDING),
    _swapper("ghost_1_256", 256, EMBEDDING, "tanh"),
    _swapper("ghost_2_256", 256, EMBEDDING, "tanh"),
    _swapper("ghost_3_256", 256, EMBEDDING, "tanh"),
    _swapper("hififace_unofficial_256", 256, EMBEDDING, "tanh"),
    _swapper("blendswap_256", 256, Tensor("source", (1, 3, 112, 112))),
    _swapper("uniface_256", 256, Tensor("source", (1, 3, 256, 256)), "tanh"),
)
CONVERTERS: tuple[Contract, ...] = tuple(
    Contract(name, "converter", (Tensor("input", (1, 512)),), (Tensor("output", (1, 512)),))
    for name in ("crossface_ghost", "crossface_hififace", "crossface_simswap"))
# Face masks (facefusion/face_masker.py): the occluders take the crop channels-last ([1, 256, 256, 3]) and give
# [1, 256, 256, 1] (FaceFusion reads [0][0] and resizes it as one channel); the parsers give 19 class logits.
OCCLUDERS: tuple[Contract, ...] = tuple(
    Contract(name, "occluder", (Tensor("input", (1, 256, 256, 3)),), (Tensor("output", (1, 256, 256, 1)),))
    for name in ("xseg_1", "xseg_2", "xseg_3"))
PARSERS: tuple[Contract, ...] = tuple(
    Contract(name, "parser", (Tensor("input", (1, 3, 512, 512)),), (Tensor("output", (1, 19, 512, 512)),), "none")
    for name in ("bisenet_resnet_18", "bisenet_resnet_34"))
CONTRACTS: dict[str, Contract] = {contract.name: contract
                                  for contract in (*SWAPPERS, *CONVERTERS, *OCCLUDERS, *PARSERS)}


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode())


class _Graph:
    """Collects nodes and seeded initializers."""

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.rng = np.random.Generator(np.random.PCG64(seed_of(contract.name)))
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def weight(self, shape: Sequence[int], std: float, mean: float = 0.0) -> str:
        """A seeded N(mean, std) initializer (float16 behind a Cast for half-weight files)."""
        values = (mean + std * self.rng.standard_normal(tuple(shape))).astype(np.float32)
        name = self.fresh("w")
        if not self.contract.half_weights:
            self.initializers.append(numpy_helper.from_array(values, name))
            return name
        self.initializers.append(numpy_helper.from_array(values.astype(np.float16), name + "_half"))
        self.node("Cast", [name + "_half"], name, to=TensorProto.FLOAT)
        return name

    def node(self, op: str, inputs: Sequence[str], output: str | None = None, **attributes: object) -> str:
        output = output or self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, list(inputs), [output], **attributes))
        return output

    def conv(self, x: str, channels_in: int, channels_out: int, kernel: int, gain: float = 1.0,
             stride: int = 1) -> str:
        std = gain / np.sqrt(channels_in * kernel * kernel)
        w = self.weight((channels_out, channels_in, kernel, kernel), std)
        b = self.weight((channels_out,), 0.1)
        pad = kernel // 2
        return self.node("Conv", [x, w, b], kernel_shape=[kernel, kernel], pads=[pad] * 4, strides=[stride] * 2)

    def image_body(self, x: str, channels_in: int, conditioning: str | None, channels_out: int = 3) -> str:
        """A random channel mix of the input plus two 3x3 convolutions (conditioned by a per-channel bias)."""
        mixed = self.conv(x, channels_in, channels_out, 1, gain=1.5)
        hidden = self.conv(x, channels_in, HIDDEN, 3, gain=2.0)
        if conditioning is not None:
            hidden = self.node("Add", [hidden, conditioning])
        hidden = self.node("Tanh", [hidden])
        detail = self.conv(hidden, HIDDEN, channels_out, 3, gain=1.0)
        return self.node("Add", [mixed, detail])

    def identity_vector(self, source: Tensor) -> str:
        """The source input as an [1, HIDDEN, 1, 1] bias: a random projection of the embedding, or of the whole
        source picture (a strided convolution, flattened, projected)."""
        if len(source.shape) == 2:
            flat = source.name
            width = source.shape[1]
        else:
            strided = self.conv(source.name, source.shape[1], 2, 3, gain=2.0, stride=8)
            flat = self.node("Flatten", [strided], axis=1)
            side = (source.shape[2] + 7) // 8
            width = 2 * side * side
        # An ArcFace-scale embedding (norm about 20) and a normalised one (norm 1) must both move the output.
        projection = self.weight((width, HIDDEN), 4.0 / np.sqrt(width))
        vector = self.node("MatMul", [flat, projection])
        shape = self.constant_ints((1, HIDDEN, 1, 1))
        return self.node("Reshape", [vector, shape])

    def blobs(self, x: str) -> str:
        """Each channel smoothed over a BLOB-wide window and standardised over the picture (zero mean, unit
        variance): an occluder's mask then has patches on both sides of 0.5 and a parser's classes each win patches
        of the picture, wide enough to outlast the masks' blur, instead of a few classes winning everywhere."""
        smooth = self.node("AveragePool", [x], kernel_shape=[BLOB, BLOB], pads=[BLOB // 2] * 4, strides=[1, 1],
                           count_include_pad=0)
        centred = self.node("Sub", [smooth, self.node("ReduceMean", [smooth], axes=[2, 3], keepdims=1)])
        variance = self.node("ReduceMean", [self.node("Mul", [centred, centred])], axes=[2, 3], keepdims=1)
        spread = self.node("Sqrt", [self.node("Add", [variance, self.constant(1e-6)])])
        return self.node("Div", [centred, spread])

    def constant(self, value: float) -> str:
        name = self.fresh("constant")
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def constant_ints(self, values: Sequence[int]) -> str:
        name = self.fresh("shape")
        self.initializers.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), name))
        return name


def build(name: str) -> onnx.ModelProto:
    """The stand-in model for catalog entry `name` (see CONTRACTS)."""
    contract = CONTRACTS[name]
    graph = _Graph(contract)
    first = contract.inputs[0]
    if contract.kind == "converter":
        matrix = graph.weight((512, 512), 1.0 / np.sqrt(512))
        product = graph.node("MatMul", [first.name, matrix])
        graph.node("Tanh", [product], contract.outputs[0].name)
    elif contract.kind == "occluder":
        planar = graph.node("Transpose", [first.name], perm=[0, 3, 1, 2])
        logits = graph.blobs(graph.image_body(planar, first.shape[3], None, contract.outputs[0].shape[3]))
        shifted = graph.node("Add", [graph.node("Mul", [logits, graph.constant(OCCLUDER_GAIN)]),
                                     graph.constant(OCCLUDER_SHIFT)])
        graph.node("Transpose", [graph.node("Sigmoid", [shifted])], contract.outputs[0].name, perm=[0, 2, 3, 1])
    elif contract.kind == "parser":
        logits = graph.blobs(graph.image_body(first.name, first.shape[1], None, contract.outputs[0].shape[1]))
        graph.node("Identity", [logits], contract.outputs[0].name)
    else:
        conditioning = graph.identity_vector(contract.inputs[1]) if contract.kind == "swapper" else None
        body = graph.image_body(first.name, first.shape[1], conditioning)
        graph.node("Sigmoid" if contract.activation == "sigmoid" else "Tanh", [body], contract.outputs[0].name)
        for extra in contract.outputs[1:]:  # hyperswap's mask
            logits = graph.conv(body, 3, extra.shape[1], 3)
            graph.node("Sigmoid", [logits], extra.name)
    if contract.emap:
        graph.initializers.append(numpy_helper.from_array(
            (graph.rng.standard_normal((512, 512)) / np.sqrt(512)).astype(np.float32), "emap"))
    inputs = [helper.make_tensor_value_info(t.name, t.dtype, list(t.shape)) for t in contract.inputs]
    outputs = [helper.make_tensor_value_info(t.name, t.dtype, list(t.shape)) for t in contract.outputs]
    model = helper.make_model(helper.make_graph(graph.nodes, f"parity_{name}", inputs, outputs, graph.initializers),
                              opset_imports=[helper.make_opsetid("", OPSET)], producer_name="slimfuse-parity")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def write(name: str, folder: Path) -> Path:
    """`folder/NAME.onnx`, built when missing (FaceFusion's and slimfuse's file name alike)."""
    path = folder / f"{name}.onnx"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        onnx.save(build(name), str(path))
    return path

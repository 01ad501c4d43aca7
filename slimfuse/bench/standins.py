"""Stand-ins with the real architectures' sizes, for the memory benchmark: random (seeded) weights, the parameter
counts of the real files, and activations at the real input resolutions with the real channel widths.

No registry ships the neural models the benchmark job needs (see the README), so `slimfuse bench memory` measures
these instead, unless the real files are in the user's store. Each has its catalog entry's tensors (names, sizes,
normalisation; the batch axis is left free, which the catalog's input check accepts) and the layer shapes of the
published architecture:
- inswapper_128 (about 554 MB): the target encoder (7x7 3->128 and 3x3 128->256 at 128 px, then 512 at 64 px and
  1024 at 32 px), six style blocks of two 1024-channel 3x3 convolutions at 32 px, each followed by AdaIN from the
  source vector (a 512 -> 2048 linear layer), the decoder back up to 128 px, and the 512 x 512 "emap" as the
  graph's last initializer (as in the real file, no node reads it).
- arcface_w600k_r50 (about 174 MB; the real file is 166 MB): an IResNet-50 (3, 4, 14 and 3 blocks of 64, 128,
  256 and 512 channels from 56 down to 7 px, 64 channels at 112 px first) and its 25088 -> 512 embedding layer.
- gfpgan_1.4 (about 337 MB): GFPGANv1Clean's U-Net (32 channels at 512 px down to 256 at 4 px, ResBlocks with
  bilinear resampling), its 4096 -> 8192 style layer, the spatial feature transform convolutions at every
  resolution, and a StyleGAN2-style decoder (512 channels from 4 to 64 px, 256 at 128, 128 at 256, 64 at 512) with
  per-layer modulation.

So that outputs are well-behaved with random weights, and an int8 variant stays close to the original (a static
int8 variant passes `slimfuse optimize NAME --int8 --gate`), each image model returns its input through a skip path
plus a small scaled residual of the whole network, bounded by tanh and clipped to the output range; residual
branches are scaled so activations stay of order one. Weights are written straight to the file as they are drawn,
in blocks, so building a 554 MB model holds a few MB of weights at a time; it takes seconds.

`width` scales every channel count (the parameter count by about width^2), for fast tests; 1.0 is the real size.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from slimfuse.atomic import atomic_writer

VERSION = "1"
"""Bump when an architecture or the weights change: the cache folder is keyed by it."""
STANDIN_LABEL = "stand-in (random weights, real sizes)"
REAL_LABEL = "real weights"
MODELS: tuple[str, ...] = ("inswapper_128", "arcface_w600k_r50", "gfpgan_1.4")
OPSET = 17
IR_VERSION = 8
BLOCK = 1 << 22
"""Weights drawn and written per step (elements)."""
SEEDS = {"inswapper_128": 128, "arcface_w600k_r50": 50, "gfpgan_1.4": 14}
SWAP_RESIDUAL = 0.08
"""How far the stand-in swapper moves a pixel at most (in [0, 1] units), and the enhancer (in [-1, 1] units)."""
ENHANCE_RESIDUAL = 0.1
LEAK = 0.2
LEAK_GAIN = math.sqrt(2.0 / (1.0 + LEAK * LEAK))


@dataclass(frozen=True)
class Init:
    """An initializer: drawn from N(0, std) when `values` is None, else the given (small) array."""

    name: str
    shape: tuple[int, ...]
    std: float = 0.0
    values: np.ndarray | None = None

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    def dtype(self) -> np.dtype:
        return np.dtype(np.float32) if self.values is None else self.values.dtype


@dataclass
class Graph:
    """A graph under construction: nodes, and initializers that are only drawn when the file is written."""

    name: str
    width: float = 1.0
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[Init] = field(default_factory=list)
    _count: int = 0

    def ch(self, channels: int) -> int:
        return max(4, int(round(channels * self.width)))

    def fresh(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}_{self._count}"

    def weight(self, prefix: str, shape: tuple[int, ...], std: float) -> str:
        name = self.fresh(prefix)
        self.inits.append(Init(name, shape, std=std))
        return name

    def const(self, prefix: str, values: np.ndarray | float | list) -> str:  # type: ignore[type-arg]
        name = self.fresh(prefix)
        array = np.asarray(values)
        array = array.astype(np.int64 if array.dtype.kind in "iu" else np.float32)
        self.inits.append(Init(name, array.shape, values=array))
        return name

    def op(self, op_type: str, inputs: list[str], outputs: int = 1, **attributes: object) -> str:
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=names[0], **attributes))
        return names[0] if outputs == 1 else ",".join(names)

    def conv(self, x: str, cin: int, cout: int, kernel: int = 3, stride: int = 1, gain: float = LEAK_GAIN,
             bias: bool = True) -> str:
        std = gain / math.sqrt(cin * kernel * kernel)
        inputs = [x, self.weight("conv_w", (cout, cin, kernel, kernel), std)]
        if bias:
            inputs.append(self.const("conv_b", np.zeros(cout)))
        pad = kernel // 2
        return self.op("Conv", inputs, kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4)

    def lrelu(self, x: str, alpha: float = LEAK) -> str:
        return self.op("LeakyRelu", [x], alpha=alpha)

    def linear(self, x: str, fin: int, fout: int, std: float, bias: np.ndarray | None = None) -> str:
        y = self.op("MatMul", [x, self.weight("fc_w", (fin, fout), std)])
        return self.op("Add", [y, self.const("fc_b", np.zeros(fout) if bias is None else bias)])

    def resize(self, x: str, scale: float) -> str:
        return self.op("Resize", [x, "", self.const("scales", [1.0, 1.0, scale, scale])], mode="linear",
                       coordinate_transformation_mode="half_pixel")

    def per_channel(self, vector: str) -> str:
        """[N, C] -> [N, C, 1, 1], to scale or shift feature maps per sample and channel."""
        return self.op("Unsqueeze", [vector, self.const("axes", [2, 3])])

    def split(self, x: str, sizes: list[int], axis: int = 1) -> list[str]:
        return self.op("Split", [x, self.const("split", sizes)], outputs=len(sizes), axis=axis).split(",")

    def skip_residual(self, skip: str, residual: str, amount: float, low: float, high: float, output: str) -> str:
        """output = clip(skip + amount * tanh(residual), low, high): the input back, changed a little."""
        bounded = self.op("Mul", [self.op("Tanh", [residual]), self.const("amount", amount)])
        moved = self.op("Add", [skip, bounded])
        self.nodes.append(helper.make_node("Clip", [moved, self.const("low", low), self.const("high", high)],
                                           [output], name="output_clip"))
        return output

    def parameters(self) -> int:
        return sum(init.elements for init in self.inits)


def _image(name: str, size: int) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", 3, size, size])


# inswapper_128 --------------------------------------------------------------------------------------------------

def inswapper(width: float = 1.0) -> tuple[Graph, list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    g = Graph("inswapper_128", width)
    c128, c256, c512, c1024 = g.ch(128), g.ch(256), g.ch(512), g.ch(1024)
    h = g.lrelu(g.conv("target", 3, c128, kernel=7))
    h = g.lrelu(g.conv(h, c128, c256))
    h = g.lrelu(g.conv(h, c256, c512, stride=2))
    h = g.lrelu(g.conv(h, c512, c1024, stride=2))
    for _ in range(6):
        r = g.op("Relu", [_adain(g, g.conv(h, c1024, c1024, gain=1.0), c1024)])
        r = _adain(g, g.conv(r, c1024, c1024, gain=1.0), c1024, strength=0.5)
        h = g.op("Add", [h, r])
    h = g.lrelu(g.conv(g.resize(h, 2.0), c1024, c512, gain=LEAK_GAIN / math.sqrt(7.0)))
    h = g.lrelu(g.conv(g.resize(h, 2.0), c512, c256))
    h = g.lrelu(g.conv(h, c256, c128))
    g.skip_residual("target", g.conv(h, c128, 3, kernel=7, gain=1.0), SWAP_RESIDUAL, 0.0, 1.0, "output")
    emap = np.random.default_rng(SEEDS["inswapper_128"] + 1).normal(0.0, 1.0 / math.sqrt(512), (512, 512))
    g.inits.append(Init("emap", (512, 512), values=emap.astype(np.float32)))  # the last initializer, read by name
    inputs = [_image("target", 128), helper.make_tensor_value_info("source", TensorProto.FLOAT, ["batch", 512])]
    return g, inputs, [_image("output", 128)]


def _adain(g: Graph, x: str, channels: int, strength: float = 1.0) -> str:
    """Instance-normalised `x` times (1 + gamma) plus beta, gamma and beta a linear map of the source vector (unit
    length, so the map's weights' std is the std of gamma and beta)."""
    normed = g.op("InstanceNormalization", [x, g.const("in_scale", np.ones(channels)),
                                            g.const("in_bias", np.zeros(channels))], epsilon=1e-5)
    bias = np.concatenate([np.ones(channels), np.zeros(channels)]).astype(np.float32)
    style = g.per_channel(g.linear("source", 512, 2 * channels, 0.3, bias))
    gamma, beta = g.split(style, [channels, channels])
    if strength != 1.0:
        gamma = g.op("Mul", [gamma, g.const("strength", strength)])
        beta = g.op("Mul", [beta, g.const("strength", strength)])
    return g.op("Add", [g.op("Mul", [normed, gamma]), beta])


# arcface_w600k_r50 ----------------------------------------------------------------------------------------------

def arcface(width: float = 1.0) -> tuple[Graph, list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    g = Graph("arcface_w600k_r50", width)
    cin = g.ch(64)
    h = g.lrelu(g.conv("input", 3, cin), 0.25)
    for channels, blocks in ((64, 3), (128, 4), (256, 14), (512, 3)):
        cout = g.ch(channels)
        for index in range(blocks):
            stride = 2 if index == 0 else 1
            r = g.lrelu(g.conv(h, cin, cout), 0.25)
            r = g.conv(r, cout, cout, stride=stride, gain=0.3)
            shortcut = h if stride == 1 and cin == cout else g.conv(h, cin, cout, kernel=1, stride=stride, gain=1.0,
                                                                     bias=False)
            h = g.op("Add", [shortcut, r])
            cin = cout
    flat = g.op("Flatten", [h], axis=1)
    features = cin * 7 * 7
    embedding = g.op("MatMul", [flat, g.weight("fc_w", (features, 512), 1.0 / math.sqrt(features))])
    g.nodes.append(helper.make_node("Add", [embedding, g.const("fc_b", np.zeros(512))], ["output"], name="output_add"))
    inputs = [_image("input", 112)]
    return g, inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 512])]


# gfpgan_1.4 -----------------------------------------------------------------------------------------------------

UNET = {512: 32, 256: 64, 128: 128, 64: 256, 32: 256, 16: 256, 8: 256, 4: 256}
DECODER = {4: 512, 8: 512, 16: 512, 32: 512, 64: 512, 128: 256, 256: 128, 512: 64}
LATENTS = 16
STYLE = 512


def gfpgan(width: float = 1.0) -> tuple[Graph, list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    g = Graph("gfpgan_1.4", width)
    unet = {size: g.ch(channels) for size, channels in UNET.items()}
    decoder = {size: g.ch(channels) for size, channels in DECODER.items()}
    style_width = g.ch(STYLE)
    feat = g.lrelu(g.conv("input", 3, unet[512], kernel=1))
    skips = []
    for size in (512, 256, 128, 64, 32, 16, 8):
        feat = _resblock(g, feat, unet[size], unet[size // 2], 0.5)
        skips.insert(0, feat)
    feat = g.lrelu(g.conv(feat, unet[4], unet[4]))
    features = unet[4] * 16
    codes = g.linear(g.op("Flatten", [feat], axis=1), features, LATENTS * style_width, 1.0 / math.sqrt(features))
    latents = g.split(codes, [style_width] * LATENTS)
    conditions = []
    for index, size in enumerate((8, 16, 32, 64, 128, 256, 512)):
        feat = _resblock(g, g.op("Add", [feat, skips[index]]), unet[size // 2], unet[size], 2.0)
        half = decoder[size] // 2
        scale = g.conv(g.lrelu(g.conv(feat, unet[size], unet[size])), unet[size], half, gain=0.1)
        shift = g.conv(g.lrelu(g.conv(feat, unet[size], unet[size])), unet[size], half, gain=0.1)
        conditions.append((g.op("Add", [scale, g.const("one", 1.0)]), shift))
    batch = g.op("Shape", ["input"], start=0, end=1)
    shape = g.op("Concat", [batch, g.const("const_shape", [decoder[4], 4, 4])], axis=0)
    constant = g.weight("const_input", (1, decoder[4], 4, 4), 1.0)
    out = g.lrelu(_modconv(g, g.op("Expand", [constant, shape]), latents[0], style_width, decoder[4], decoder[4]))
    rgb = _modconv(g, out, latents[1], style_width, decoder[4], 3, kernel=1, gain=1.0)
    latent = 1
    for (scale, shift), size in zip(conditions, (8, 16, 32, 64, 128, 256, 512), strict=True):
        channels = decoder[size]
        out = g.lrelu(_modconv(g, g.resize(out, 2.0), latents[latent], style_width, decoder[size // 2], channels))
        same, sft = g.split(out, [channels - channels // 2, channels // 2])
        out = g.op("Concat", [same, g.op("Add", [g.op("Mul", [sft, scale]), shift])], axis=1)
        out = g.lrelu(_modconv(g, out, latents[latent + 1], style_width, channels, channels))
        skip_rgb = _modconv(g, out, latents[latent + 2], style_width, channels, 3, kernel=1, gain=1.0)
        rgb = g.op("Add", [g.op("Mul", [g.resize(rgb, 2.0), g.const("fade", 0.7)]), skip_rgb])
        latent += 2
    g.skip_residual("input", rgb, ENHANCE_RESIDUAL, -1.0, 1.0, "output")
    return g, [_image("input", 512)], [_image("output", 512)]


def _resblock(g: Graph, x: str, cin: int, cout: int, scale: float) -> str:
    """GFPGANv1Clean's ResBlock: conv, resample, conv (in -> out), plus a resampled 1x1 skip; the sum scaled by
    1/sqrt(2) (folded into both branches' weights)."""
    out = g.lrelu(g.conv(x, cin, cin))
    out = g.lrelu(g.conv(g.resize(out, scale), cin, cout, gain=LEAK_GAIN / math.sqrt(2.0)))
    skip = g.conv(g.resize(x, scale), cin, cout, kernel=1, gain=1.0 / math.sqrt(2.0), bias=False)
    return g.op("Add", [out, skip])


def _modconv(g: Graph, x: str, latent: str, style_width: int, cin: int, cout: int, kernel: int = 3,
             gain: float = LEAK_GAIN) -> str:
    """StyleGAN2's modulated convolution, as scaling the input channels per sample by (1 + a map of the latent)
    before a plain convolution (same weights and compute; demodulation left out)."""
    modulation = g.per_channel(g.linear(latent, style_width, cin, 0.1 / math.sqrt(style_width), np.ones(cin)))
    return g.conv(g.op("Mul", [x, modulation]), cin, cout, kernel=kernel, gain=gain)


BUILDERS: dict[str, Callable[[float], tuple[Graph, list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]]] = {
    "inswapper_128": inswapper, "arcface_w600k_r50": arcface, "gfpgan_1.4": gfpgan,
}


# Writing --------------------------------------------------------------------------------------------------------

def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


_GRAPH_FIELD = 7
_INITIALIZER_FIELD = 5
_RAW_DATA_FIELD = 9
_ELEMENT_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}


def _tensor_prefix(init: Init) -> tuple[bytes, int]:
    """The bytes of GraphProto's initializer field for `init` up to its raw data, and the raw data's length."""
    header = TensorProto(name=init.name, dims=list(init.shape), data_type=_ELEMENT_TYPES[init.dtype()])
    header_bytes = header.SerializeToString()
    raw = init.elements * init.dtype().itemsize
    body = header_bytes + _key(_RAW_DATA_FIELD, 2) + _varint(raw)
    return _key(_INITIALIZER_FIELD, 2) + _varint(len(body) + raw) + body, raw


def _raw_blocks(init: Init, rng: np.random.Generator) -> Iterator[bytes]:
    if init.values is not None:
        yield np.ascontiguousarray(init.values, dtype=init.dtype()).astype(init.dtype().newbyteorder("<")).tobytes()
        return
    left = init.elements
    while left:
        count = min(left, BLOCK)
        block = rng.standard_normal(count, dtype=np.float32)
        block *= np.float32(init.std)
        yield block.astype("<f4", copy=False).tobytes()
        left -= count


def write(graph: Graph, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto], path: Path,
          seed: int) -> Path:
    """Write `graph` as an ONNX file at `path` (atomically), drawing its weights block by block on the way: the
    file is one ordinary ModelProto (fields in canonical order), but never wholly in memory."""
    nodes_part = helper.make_graph(graph.nodes, f"standin_{graph.name}", [], []).SerializeToString()
    io_part = onnx.GraphProto(input=inputs, output=outputs).SerializeToString()
    prefixes = [_tensor_prefix(init) for init in graph.inits]
    graph_length = len(nodes_part) + len(io_part) + sum(len(prefix) + raw for prefix, raw in prefixes)
    shell = helper.make_model(onnx.GraphProto(), opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="slimfuse-bench-standins", producer_version=VERSION)
    shell.ir_version = IR_VERSION
    shell.ClearField("graph")
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as handle:
        handle.write(shell.SerializeToString())
        handle.write(_key(_GRAPH_FIELD, 2) + _varint(graph_length) + nodes_part)
        for init, (prefix, _) in zip(graph.inits, prefixes, strict=True):
            handle.write(prefix)
            for block in _raw_blocks(init, rng):
                handle.write(block)
        handle.write(io_part)
    return path


def build(name: str, path: Path, width: float = 1.0) -> Path:
    """Write the stand-in of model `name` (one of MODELS) at `path`."""
    graph, inputs, outputs = BUILDERS[name](width)
    return write(graph, inputs, outputs, path, SEEDS[name])


def parameters(name: str, width: float = 1.0) -> int:
    """The stand-in's parameter count (without drawing a weight)."""
    return BUILDERS[name](width)[0].parameters()


def cache_dir(home: Path, width: float = 1.0) -> Path:
    """Where built stand-ins are kept: a folder of the store's home, keyed by VERSION (and the width)."""
    tag = f"v{VERSION}" if width == 1.0 else f"v{VERSION}-w{width:g}"
    return home / "bench-standins" / tag


def ensure(home: Path, names: tuple[str, ...] = MODELS, width: float = 1.0) -> dict[str, Path]:
    """The stand-ins of `names`, built into the cache folder of store home `home` unless already there."""
    from slimfuse.models.catalog import Catalog

    folder = cache_dir(home, width)
    found = {}
    for name in names:
        path = folder / Catalog().get(name).filename
        if not path.is_file():
            build(name, path, width)
        found[name] = path
    return found

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
    shape: tuple[int | str, ...]
    """Fixed sizes as ints; a named (str) axis takes any size, as in the published file."""
    dtype: int = TensorProto.FLOAT


@dataclass(frozen=True)
class Contract:
    """One model file's signature and what the stand-in computes.

    kind: "swapper" (target image + source identity -> image), "image" (image -> image of the same size: the face
    enhancers, CodeFormer with its fidelity `weight` as a second input), "upscaler" (image -> image `scale` times
    larger: the frame enhancers), "converter" (512 -> 512), "scrfd" / "yunet" / "yolo" (a face detector's raw
    outputs, see DETECTORS), "recognizer" (aligned face -> embedding), "occluder" (channels-last image ->
    channels-last one-channel mask), "parser" (image -> class logits of the same size), "lip_syncer" (mel window +
    face (+ edtalk's weight) -> face), "voice_extractor" (spectra -> spectra), "remover" (a whole frame -> its
    foreground's alpha, or class logits; corridor_key also gives the foreground's colours).
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
    scale: int = 1
    """upscaler: how many times larger the output is per side."""
    suffix: str = ".onnx"
    """The file's suffix (a DFM file's is .dfm; its name's SCOPE/ is a folder)."""

    @property
    def filename(self) -> str:
        return f"{self.name}{self.suffix}"


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


def _face_enhancer(name: str, size: int, weight: bool = False) -> Contract:
    """FaceFusion's face_enhancer feeds `input` (and CodeFormer's `weight`, float64 [1]) and reads the first output
    in [-1, 1]."""
    extra = (Tensor("weight", (1,), TensorProto.DOUBLE),) if weight else ()
    return Contract(name, "image", (Tensor("input", (1, 3, size, size)), *extra),
                    (Tensor("output", (1, 3, size, size)),), "tanh")


FACE_ENHANCERS: tuple[Contract, ...] = (
    _face_enhancer("gfpgan_1.2", 512),
    _face_enhancer("gfpgan_1.3", 512),
    _face_enhancer("gfpgan_1.4", 512),
    _face_enhancer("codeformer", 512, weight=True),
    _face_enhancer("gpen_bfr_256", 256),
    _face_enhancer("gpen_bfr_512", 512),
    _face_enhancer("gpen_bfr_1024", 1024),
    _face_enhancer("restoreformer_plus_plus", 512),
)
FRAME_ENHANCERS: tuple[Contract, ...] = tuple(
    Contract(f"real_esrgan_x{scale}", "upscaler", (Tensor("input", (1, 3, "height", "width")),),
             (Tensor("output", (1, 3, f"height_x{scale}", f"width_x{scale}")),), scale=scale)
    for scale in (2, 4))
"""FaceFusion's frame_enhancer feeds `input` (RGB / 255, 256 px tiles) and reads the first output in [0, 1]."""


# Face analysis (FaceFusion's face_detector.py, face_recognizer.py). The inputs are the `input` FaceFusion feeds (the
# detect frame, the aligned face; NCHW); the outputs come in the order FaceFusion reads them, by position. Neither
# program reads the outputs' names: YuNet's are OpenCV's, the others say what the output holds. SCRFD and RetinaFace
# take any size FaceFusion offers (160 to 640).
DETECTOR_STRIDES = (8, 16, 32)
DETECTOR_SIZE = 640


def _scrfd(name: str) -> Contract:
    """Per stride, [anchors, C]: scores (1), box distances (4), keypoint offsets (10); 2 anchors a cell, no batch."""
    outputs = tuple(Tensor(f"{kind}_{stride}", (f"anchors_{stride}", width))
                    for kind, width in (("score", 1), ("bbox", 4), ("kps", 10)) for stride in DETECTOR_STRIDES)
    return Contract(name, "scrfd", (Tensor("input", (1, 3, "height", "width")),), outputs)


def _yunet(name: str) -> Contract:
    """Per stride, [1, cells, C]: class score, objectness, box (centre offset, log size), keypoint offsets."""
    outputs = tuple(Tensor(f"{kind}_{stride}", (1, (DETECTOR_SIZE // stride) ** 2, width))
                    for kind, width in (("cls", 1), ("obj", 1), ("bbox", 4), ("kps", 10))
                    for stride in DETECTOR_STRIDES)
    return Contract(name, "yunet", (Tensor("input", (1, 3, DETECTOR_SIZE, DETECTOR_SIZE)),), outputs)


def _yolo(name: str) -> Contract:
    """[1, 20, anchors]: centre, size, score, 5 x (x, y, visibility), in input pixels."""
    anchors = sum((DETECTOR_SIZE // stride) ** 2 for stride in DETECTOR_STRIDES)
    return Contract(name, "yolo", (Tensor("input", (1, 3, DETECTOR_SIZE, DETECTOR_SIZE)),),
                    (Tensor("output", (1, 20, anchors)),))


DETECTORS: tuple[Contract, ...] = (_scrfd("scrfd_2.5g"), _scrfd("retinaface_10g"), _yunet("yunet_2023_mar"),
                                   _yolo("yoloface_8n"))
RECOGNIZERS: tuple[Contract, ...] = (
    Contract("arcface_w600k_r50", "recognizer", (Tensor("input", (1, 3, 112, 112)),), (Tensor("output", (1, 512)),)),
)


# Face masks (facefusion/face_masker.py): the occluders take the crop channels-last ([1, 256, 256, 3]) and give
# [1, 256, 256, 1] (FaceFusion reads [0][0] and resizes it as one channel); the parsers give 19 class logits.
OCCLUDERS: tuple[Contract, ...] = tuple(
    Contract(name, "occluder", (Tensor("input", (1, 256, 256, 3)),), (Tensor("output", (1, 256, 256, 1)),))
    for name in ("xseg_1", "xseg_2", "xseg_3"))
PARSERS: tuple[Contract, ...] = tuple(
    Contract(name, "parser", (Tensor("input", (1, 3, 512, 512)),), (Tensor("output", (1, 19, 512, 512)),), "none")
    for name in ("bisenet_resnet_18", "bisenet_resnet_34"))


# Deep swapper (facefusion/processors/modules/deep_swapper/core.py, DeepFaceLive's DFMModel): DeepFaceLab's DFM
# export, channels last, a free batch axis; `morph_value:0` only in the files trained with a morph factor. Outputs in
# the order both programs read them: the input face's mask, the person's face, the person's mask.
def _dfm(name: str, size: int, morph: bool) -> Contract:
    face = Tensor("in_face:0", ("batch", size, size, 3))
    inputs = (face, Tensor("morph_value:0", (1,))) if morph else (face,)
    outputs = (Tensor("out_face_mask:0", ("batch", size, size, 1)), Tensor("out_celeb_face:0", ("batch", size, size, 3)),
               Tensor("out_celeb_face_mask:0", ("batch", size, size, 1)))
    return Contract(name, "dfm", inputs, outputs, suffix=".dfm")


DEEP_SWAPPERS: tuple[Contract, ...] = (
    _dfm("iperov/elon_musk_224", 224, morph=True),
    _dfm("jen/angelica_trae_288", 288, morph=False),
)
"""Two of FaceFusion's published files (one with a morph input, one without, two sizes)."""
USER_DFM = _dfm("custom/own_face_320", 320, morph=True)
"""A user's own file (placed by path or in --models-dir's custom folder)."""
# The age modifiers (facefusion/processors/modules/age_modifier): fran takes the 1024 px face and `direction` [2];
# styleganex_age the 256 px face, the 384 px surroundings and a scalar `direction` (FaceFusion feeds a 0-d array),
# and gives the surroundings at 4 x 384 px in [-1, 1].
AGE_MODIFIERS: tuple[Contract, ...] = (
    Contract("fran", "age", (Tensor("target", (1, 3, 1024, 1024)), Tensor("direction", (2,))),
             (Tensor("output", (1, 3, 1024, 1024)),)),
    Contract("styleganex_age", "age", (Tensor("target", (1, 3, 256, 256)),
                                       Tensor("target_with_background", (1, 3, 384, 384)), Tensor("direction", ())),
             (Tensor("output", (1, 3, 1536, 1536)),), "tanh", scale=4),
)


def _colorizer(name: str, channels: int) -> Contract:
    """FaceFusion's frame_colorizer feeds `input` at --frame-colorizer-size: the ddcolor family gives LAB a and b
    (2 channels, "lab": a tanh scaled to +-COLOUR_SPREAD), the deoldify family takes 0..255 and gives RGB in 0..255
    ("rgb255")."""
    return Contract(name, "colorizer", (Tensor("input", (1, 3, "height", "width")),),
                    (Tensor("output", (1, channels, "height", "width")),), "lab" if channels == 2 else "rgb255")


FRAME_COLORIZERS: tuple[Contract, ...] = (
    _colorizer("ddcolor", 2), _colorizer("ddcolor_artistic", 2), _colorizer("deoldify", 3),
    _colorizer("deoldify_artistic", 3), _colorizer("deoldify_stable", 3))
COLOUR_SPREAD = 60.0
"""The ddcolor stand-ins' largest a and b (LAB units)."""


# LivePortrait (facefusion/processors/modules/expression_restorer/core.py, face_editor/core.py): the extractors take
# the 512 px crop halved, RGB / 255; FaceFusion reads the motion extractor's seven outputs by position (pitch, yaw and
# roll one number each: it hands them to scipy's from_euler), the generator's first output [1, 3, 512, 512] in 0..1.
LP_IMAGE = Tensor("input", (1, 3, 256, 256))
LP_POINTS = (1, 21, 3)
LIVE_PORTRAIT: tuple[Contract, ...] = (
    Contract("live_portrait_feature_extractor", "lp_features", (LP_IMAGE,),
             (Tensor("feature_volume", (1, 32, 16, 64, 64)),)),
    Contract("live_portrait_motion_extractor", "lp_motion", (LP_IMAGE,), (
        Tensor("pitch", ()), Tensor("yaw", ()), Tensor("roll", ()), Tensor("scale", (1, 1)),
        Tensor("translation", (1, 3)), Tensor("expression", LP_POINTS), Tensor("motion_points", LP_POINTS))),
    Contract("live_portrait_generator", "lp_generator", (
        Tensor("feature_volume", (1, 32, 16, 64, 64)), Tensor("source", LP_POINTS), Tensor("target", LP_POINTS)),
        (Tensor("output", (1, 3, 512, 512)),)),
    Contract("live_portrait_stitcher", "lp_stitcher", (Tensor("source", LP_POINTS), Tensor("target", LP_POINTS)),
             (Tensor("output", LP_POINTS),)),
    Contract("live_portrait_eye_retargeter", "lp_retargeter", (Tensor("input", (1, 66)),), (Tensor("output", (1, 63)),)),
    Contract("live_portrait_lip_retargeter", "lp_retargeter", (Tensor("input", (1, 65)),), (Tensor("output", (1, 63)),)),
)

# Lip syncers (facefusion/processors/modules/lip_syncer/core.py): FaceFusion feeds `source`, a [1, 1, 80, 16] mel
# window, and `target`, the face (wav2lip: 6 channels at 96 px, the face with its lower half black then whole;
# edtalk: 3 at 256 px, with `weight` [1] float32), and reads the first output in [0, 1].
MEL = Tensor("source", (1, 1, 80, 16))


def _lip_syncer(name: str, channels: int, size: int, weight: bool = False) -> Contract:
    extra = (Tensor("weight", (1,)),) if weight else ()
    return Contract(name, "lip_syncer", (MEL, Tensor("target", (1, channels, size, size)), *extra),
                    (Tensor("output", (1, 3, size, size)),))


LIP_SYNCERS: tuple[Contract, ...] = (
    _lip_syncer("wav2lip_96", 6, 96), _lip_syncer("wav2lip_gan_96", 6, 96), _lip_syncer("edtalk_256", 3, 256, True))
# Voice extractors (facefusion/voice_extractor.py): `input` [windows, 4, 3072, 256] (each stereo channel's real and
# imaginary spectrum) -> the voice's spectrum, the same shape, read by position. The stand-in keeps each value times
# a mask in (0, 1) computed from its neighbourhood in every channel.
SPECTRUM = ("batch", 4, 3072, 256)
VOICE_EXTRACTORS: tuple[Contract, ...] = tuple(
    Contract(name, "voice_extractor", (Tensor("input", SPECTRUM),), (Tensor("output", SPECTRUM),))
    for name in ("kim_vocal_1", "kim_vocal_2", "uvr_mdxnet"))


# Background removers (facefusion/processors/modules/background_remover/core.py): FaceFusion feeds `input`, the
# whole frame resized to the model's square size (4 channels for corridor_key: the frame and a coarse key), and
# reads the outputs by position: the alpha [1, 1, S, S] (u2net_cloth: 4 class scores, argmax), and corridor_key's
# foreground colours [1, 3, S, S] second.
def _remover(name: str, size: int, channels: int = 3, classes: int = 1, foreground: bool = False) -> Contract:
    outputs = (Tensor("alpha", (1, classes, size, size)),)
    if foreground:
        outputs += (Tensor("foreground", (1, 3, size, size)),)
    return Contract(name, "remover", (Tensor("input", (1, channels, size, size)),), outputs,
                    "none" if classes > 1 else "sigmoid")


REMOVERS: tuple[Contract, ...] = (
    _remover("ben_2", 1024), _remover("birefnet_general", 1024), _remover("birefnet_portrait", 1024),
    _remover("corridor_key_1024", 1024, channels=4, foreground=True),
    _remover("corridor_key_2048", 2048, channels=4, foreground=True), _remover("isnet_general", 1024),
    _remover("modnet", 512), _remover("ormbg", 1024), _remover("rmbg_1.4", 1024), _remover("rmbg_2.0", 1024),
    _remover("silueta", 320), _remover("u2net_cloth", 768, classes=4), _remover("u2net_general", 320),
    _remover("u2net_human", 320), _remover("u2netp", 320),
)
CONTRACTS: dict[str, Contract] = {contract.name: contract for contract in (
    *SWAPPERS, *CONVERTERS, *FACE_ENHANCERS, *FRAME_ENHANCERS, *DETECTORS, *RECOGNIZERS, *OCCLUDERS, *PARSERS,
    *DEEP_SWAPPERS, USER_DFM, *AGE_MODIFIERS, *FRAME_COLORIZERS, *LIVE_PORTRAIT, *LIP_SYNCERS, *VOICE_EXTRACTORS,
    *REMOVERS)}


VOICE_RATE = 48_000
VOICE_FPS = 25
VOICE_PARTS = ((0.4, 0.0), (0.4, 300.0), (0.4, -1.0), (0.4, 1000.0), (0.4, 0.0))
"""The parity sound: (seconds, what) parts, a tone of that many Hz, silence (0) or noise (-1)."""


def parity_voice(repeats: int = 1) -> np.ndarray:
    """The sound both programs hear in the lip syncer's parity tests: VOICE_RATE stereo int16 (n x 2), silence,
    a 300 Hz tone, noise, a 1 kHz tone and silence again (0.4 s each, a faint hiss throughout), the right channel at
    half the left's level, from a seeded generator; `repeats` times over (the voice extractor's test takes 6 s, so
    that its overlapping 5.12 s pieces meet)."""
    rng = np.random.Generator(np.random.PCG64(seed_of("parity_voice")))
    parts = []
    for seconds, what in VOICE_PARTS:
        time = np.arange(round(seconds * VOICE_RATE)) / VOICE_RATE
        part = rng.standard_normal(time.size) * 0.3 if what < 0 else 0.5 * np.sin(2 * np.pi * what * time)
        parts.append(part + rng.standard_normal(time.size) * 0.002)
    left = np.tile(np.concatenate(parts), repeats) * 20_000
    return np.stack([left, left / 2], axis=1).astype(np.int16)


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

    def fidelity_vector(self, weight: Tensor) -> str:
        """A scalar input (CodeFormer's float64 weight) as an [1, HIDDEN, 1, 1] bias along a random direction."""
        as_float = self.node("Cast", [weight.name], to=TensorProto.FLOAT)
        return self.node("Mul", [as_float, self.weight((1, HIDDEN, 1, 1), 2.0)])

    def upscaled_body(self, x: str, channels_in: int, scale: int, conditioning: str | None = None) -> str:
        """The image body with scale x scale values per input pixel, moved into place (DepthToSpace)."""
        channels = 3 * scale * scale
        mixed = self.conv(x, channels_in, channels, 1, gain=1.5)
        hidden = self.conv(x, channels_in, HIDDEN, 3, gain=2.0)
        if conditioning is not None:
            hidden = self.node("Add", [hidden, conditioning])
        hidden = self.node("Tanh", [hidden])
        detail = self.conv(hidden, HIDDEN, channels, 3, gain=1.0)
        return self.node("DepthToSpace", [self.node("Add", [mixed, detail])], blocksize=scale, mode="DCR")

    def identity_vector(self, source: Tensor) -> str:
        """The source input as an [1, HIDDEN, 1, 1] bias: a random projection of the embedding (or of a lip
        syncer's mel window, flattened), or of the whole source picture (a strided convolution, flattened,
        projected)."""
        gain = 4.0
        if source.shape == MEL.shape:  # values -4..4 at every element: a smaller projection keeps Tanh unsaturated
            flat = self.node("Flatten", [source.name], axis=1)
            width = int(np.prod(source.shape))
            gain = 0.5
        elif len(source.shape) == 2:
            flat = source.name
            width = source.shape[1]
        else:
            strided = self.conv(source.name, source.shape[1], 2, 3, gain=2.0, stride=8)
            flat = self.node("Flatten", [strided], axis=1)
            side = (source.shape[2] + 7) // 8
            width = 2 * side * side
        # An ArcFace-scale embedding (norm about 20) and a normalised one (norm 1) must both move the output.
        projection = self.weight((width, HIDDEN), gain / np.sqrt(width))
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
    if contract.kind in FACE_ANALYSIS:
        FACE_ANALYSIS[contract.kind](graph, contract)
    elif contract.kind in EDITORS:
        EDITORS[contract.kind](graph, contract)
    elif contract.kind in LIVE_PORTRAIT_BUILDERS:
        LIVE_PORTRAIT_BUILDERS[contract.kind](graph, contract)
    elif contract.kind == "converter":
        matrix = graph.weight((512, 512), 1.0 / np.sqrt(512))
        product = graph.node("MatMul", [first.name, matrix])
        graph.node("Tanh", [product], contract.outputs[0].name)
    elif contract.kind == "upscaler":
        body = graph.upscaled_body(first.name, int(first.shape[1]), contract.scale)
        graph.node("Sigmoid", [body], contract.outputs[0].name)
    elif contract.kind == "occluder":
        planar = graph.node("Transpose", [first.name], perm=[0, 3, 1, 2])
        logits = graph.blobs(graph.image_body(planar, first.shape[3], None, contract.outputs[0].shape[3]))
        shifted = graph.node("Add", [graph.node("Mul", [logits, graph.constant(OCCLUDER_GAIN)]),
                                     graph.constant(OCCLUDER_SHIFT)])
        graph.node("Transpose", [graph.node("Sigmoid", [shifted])], contract.outputs[0].name, perm=[0, 2, 3, 1])
    elif contract.kind == "dfm":
        _build_dfm(graph, contract)
    elif contract.kind == "parser":
        logits = graph.blobs(graph.image_body(first.name, first.shape[1], None, contract.outputs[0].shape[1]))
        graph.node("Identity", [logits], contract.outputs[0].name)
    elif contract.kind == "remover":
        _build_remover(graph, contract)
    elif contract.kind == "voice_extractor":
        mask = graph.node("Sigmoid", [graph.image_body(first.name, 4, None, channels_out=4)])
        graph.node("Mul", [first.name, mask], contract.outputs[0].name)
    elif contract.kind == "lip_syncer":
        conditioning = graph.identity_vector(contract.inputs[0])
        if len(contract.inputs) > 2:  # edtalk's weight
            conditioning = graph.node("Add", [conditioning, graph.fidelity_vector(contract.inputs[2])])
        body = graph.image_body(contract.inputs[1].name, int(contract.inputs[1].shape[1]), conditioning)
        graph.node("Sigmoid", [body], contract.outputs[0].name)
    else:
        conditioning = None
        if contract.kind == "swapper":
            conditioning = graph.identity_vector(contract.inputs[1])
        elif len(contract.inputs) > 1:  # CodeFormer's fidelity
            conditioning = graph.fidelity_vector(contract.inputs[1])
        body = graph.image_body(first.name, int(first.shape[1]), conditioning)
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
    """`folder/NAME.onnx` (a DFM file: `folder/SCOPE/NAME.dfm`), built when missing (FaceFusion's and slimfuse's file
    name alike)."""
    path = folder / CONTRACTS[name].filename
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(build(name), str(path))
    return path


# Face analysis graphs. A detector's outputs come from a strided backbone (3x3 convolutions of stride 2 down to
# strides 8, 16 and 32), so each output cell depends on its neighbourhood of the input; the score heads are biased so
# that on the packaged photos 40 to 220 of the anchors pass FaceFusion's 0.5 threshold and NMS has overlaps to settle.

def _constant(graph: _Graph, values: object) -> str:
    name = graph.fresh("c")
    graph.initializers.append(numpy_helper.from_array(np.asarray(values, dtype=np.float32), name))
    return name


def _affine(graph: _Graph, x: str, scale: object, shift: object) -> str:
    """x * scale + shift, per channel (a value or one per channel of an NCHW tensor)."""
    def per_channel(value: object) -> np.ndarray:
        return np.asarray(value, dtype=np.float32).reshape(1, -1, 1, 1)

    return graph.node("Add", [graph.node("Mul", [x, _constant(graph, per_channel(scale))]),
                              _constant(graph, per_channel(shift))])


def _features(graph: _Graph, x: str, last: int = 32) -> dict[int, str]:
    """Feature maps (HIDDEN channels) at strides 8, 16, ... `last`."""
    found: dict[int, str] = {}
    channels, stride = 3, 1
    while stride < last:
        x = graph.node("Tanh", [graph.conv(x, channels, HIDDEN, 3, gain=2.0, stride=2)])
        channels, stride = HIDDEN, stride * 2
        if stride >= 8:
            found[stride] = x
    return found


def _head(graph: _Graph, feature: str, channels: int, activation: str | None = None, scale: object = 1.0,
          shift: object = 0.0) -> str:
    """A 3x3 convolution of a feature map to `channels`, through `activation`, then scaled and shifted."""
    x = graph.conv(feature, HIDDEN, channels, 3)
    if activation is not None:
        x = graph.node(activation, [x])
    return _affine(graph, x, scale, shift)


def _score(graph: _Graph, feature: str, channels: int, bias: float) -> str:
    """Sigmoid of a steep, biased logit: few cells above 0.5."""
    return graph.node("Sigmoid", [_head(graph, feature, channels, scale=4.0, shift=bias)])


def _rows(graph: _Graph, x: str, width: int, output: str, batch: bool = False) -> str:
    """NCHW -> [cells x anchors, width] (with `batch`: [1, cells x anchors, width]), cells row by row."""
    last = graph.node("Transpose", [x], perm=[0, 2, 3, 1])
    return graph.node("Reshape", [last, graph.constant_ints((1, -1, width) if batch else (-1, width))], output)


SCRFD_SCORE_BIAS = -5.0
YUNET_SCORE_BIAS = -7.5
YOLO_SCORE_BIAS = -5.0


def _build_scrfd(graph: _Graph, contract: Contract) -> None:
    features = _features(graph, contract.inputs[0].name)
    names = iter(tensor.name for tensor in contract.outputs)
    heads = {stride: (_score(graph, feature, 2, SCRFD_SCORE_BIAS),
                      _head(graph, feature, 8, "Softplus", 1.5, 0.5),  # distances, 0.5 stride and more
                      _head(graph, feature, 20, "Tanh", 2.5))  # keypoint offsets within 2.5 strides
             for stride, feature in features.items()}
    for part, width in enumerate((1, 4, 10)):
        for stride in DETECTOR_STRIDES:
            _rows(graph, heads[stride][part], width, next(names))


def _build_yunet(graph: _Graph, contract: Contract) -> None:
    centred = _affine(graph, contract.inputs[0].name, 1 / 127.5, -1.0)  # its input is 0..255
    features = _features(graph, centred)
    names = iter(tensor.name for tensor in contract.outputs)
    heads = {stride: (graph.node("Sigmoid", [_head(graph, feature, 1, scale=2.0, shift=2.0)]),
                      _score(graph, feature, 1, YUNET_SCORE_BIAS),
                      _head(graph, feature, 4, "Tanh", (0.5, 0.5, 0.8, 0.8), (0.0, 0.0, 1.0, 1.0)),
                      _head(graph, feature, 10, "Tanh", 2.5))
             for stride, feature in features.items()}
    for part, width in enumerate((1, 1, 4, 10)):
        for stride in DETECTOR_STRIDES:
            _rows(graph, heads[stride][part], width, next(names), batch=True)


def _grid(cells: int, stride: int, repeats: int) -> np.ndarray:
    """[1, 2 x repeats, cells, cells]: each cell's centre in input pixels, x then y, `repeats` times."""
    ys, xs = np.mgrid[:cells, :cells]
    centre = (np.stack([xs, ys]) + 0.5) * stride
    return np.tile(centre, (repeats, 1, 1))[None]


def _build_yolo(graph: _Graph, contract: Contract) -> None:
    centred = _affine(graph, contract.inputs[0].name, 2.0, -1.0)  # its input is 0..1
    columns = []
    for stride, feature in _features(graph, centred).items():
        cells = DETECTOR_SIZE // stride
        centre = graph.node("Add", [_head(graph, feature, 2, "Tanh", stride), _constant(graph, _grid(cells, stride, 1))])
        size = _head(graph, feature, 2, "Softplus", 2.0 * stride, stride)
        score = _score(graph, feature, 1, YOLO_SCORE_BIAS)
        points = graph.node("Add", [_head(graph, feature, 10, "Tanh", 2.5 * stride),
                                    _constant(graph, _grid(cells, stride, 5))])
        seen = graph.node("Sigmoid", [_head(graph, feature, 5)])
        triples = graph.node("Concat", [graph.node("Reshape", [points, graph.constant_ints((1, 5, 2, cells, cells))]),
                                        graph.node("Reshape", [seen, graph.constant_ints((1, 5, 1, cells, cells))])],
                             axis=2)
        flat = graph.node("Reshape", [triples, graph.constant_ints((1, 15, cells, cells))])
        head = graph.node("Concat", [centre, size, score, flat], axis=1)
        columns.append(graph.node("Reshape", [head, graph.constant_ints((1, 20, -1))]))
    graph.node("Concat", columns, contract.outputs[0].name, axis=2)


def _build_recognizer(graph: _Graph, contract: Contract) -> None:
    """Three 3x3 convolutions of stride 2 (112 -> 14 px), flattened, projected to 512 at ArcFace's scale (a norm
    of 20 to 30): every element depends on every input channel and position."""
    x, channels = contract.inputs[0].name, 3
    for _ in range(3):
        x = graph.node("Tanh", [graph.conv(x, channels, HIDDEN, 3, gain=2.0, stride=2)])
        channels = HIDDEN
    width = HIDDEN * 14 * 14
    flat = graph.node("Flatten", [x], axis=1)
    graph.node("MatMul", [flat, graph.weight((width, 512), 1.6 / np.sqrt(width))], contract.outputs[0].name)


def _build_remover(graph: _Graph, contract: Contract) -> None:
    """The alpha as an occluder's mask (patches on both sides of one half, with soft edges between them), or class
    logits as a parser's; corridor_key's foreground as an image model's output."""
    first, alpha = contract.inputs[0], contract.outputs[0]
    logits = graph.blobs(graph.image_body(first.name, first.shape[1], None, alpha.shape[1]))
    if contract.activation == "none":
        graph.node("Identity", [logits], alpha.name)
    else:
        shifted = graph.node("Add", [graph.node("Mul", [logits, graph.constant(OCCLUDER_GAIN)]),
                                     graph.constant(OCCLUDER_SHIFT)])
        graph.node("Sigmoid", [shifted], alpha.name)
    for extra in contract.outputs[1:]:
        graph.node("Sigmoid", [graph.image_body(first.name, first.shape[1], None, extra.shape[1])], extra.name)


FACE_ANALYSIS = {"scrfd": _build_scrfd, "yunet": _build_yunet, "yolo": _build_yolo, "recognizer": _build_recognizer}


DFM_MASK_GAIN, DFM_MASK_SHIFT = 2.0, 1.5
"""The DFM masks' standardised logit, scaled and shifted: mostly the face (sigmoid(1.5) = 0.82), with patches
where one mask or the other cuts it."""


def _build_dfm(graph: _Graph, contract: Contract) -> None:
    """The person's face: the image body of the channels-last input, conditioned by the morph value (a scalar along
    a random direction, when the file takes one), through a sigmoid; each mask: smooth standardised patches of a
    head of that body (so each depends on the face and the morph too), through a sigmoid."""
    face = contract.inputs[0]
    planar = graph.node("Transpose", [face.name], perm=[0, 3, 1, 2])
    conditioning = None
    if len(contract.inputs) > 1:
        scalar = graph.node("Reshape", [contract.inputs[1].name, graph.constant_ints((1, 1, 1, 1))])
        conditioning = graph.node("Mul", [scalar, graph.weight((1, HIDDEN, 1, 1), 2.0)])
    body = graph.image_body(planar, 3, conditioning)
    last = [0, 2, 3, 1]
    face_mask, person, person_mask = (tensor.name for tensor in contract.outputs)
    graph.node("Transpose", [graph.node("Sigmoid", [body])], person, perm=last)
    for name in (face_mask, person_mask):
        logits = graph.blobs(graph.conv(body, 3, 1, 3))
        shifted = graph.node("Add", [graph.node("Mul", [logits, graph.constant(DFM_MASK_GAIN)]),
                                     graph.constant(DFM_MASK_SHIFT)])
        graph.node("Transpose", [graph.node("Sigmoid", [shifted])], name, perm=last)
# Face and frame editors: the age modifiers' direction (and styleganex_age's 256 px face) condition the hidden layer
# of the picture they give, so a wrong direction, face or surroundings changes every output pixel.

def _direction_vector(graph: _Graph, direction: Tensor) -> str:
    """`direction` ([2] or a scalar) as an [1, HIDDEN, 1, 1] bias along random directions."""
    if direction.shape == ():
        return graph.node("Mul", [direction.name, graph.weight((1, HIDDEN, 1, 1), 2.0)])
    row = graph.node("Reshape", [direction.name, graph.constant_ints((1, -1))])
    projected = graph.node("MatMul", [row, graph.weight((direction.shape[0], HIDDEN), 4.0)])
    return graph.node("Reshape", [projected, graph.constant_ints((1, HIDDEN, 1, 1))])


def _build_age(graph: _Graph, contract: Contract) -> None:
    direction = _direction_vector(graph, contract.inputs[-1])
    if contract.scale == 1:
        body = graph.image_body(contract.inputs[0].name, 3, direction)
        graph.node("Sigmoid", [body], contract.outputs[0].name)
        return
    conditioning = graph.node("Add", [direction, graph.identity_vector(contract.inputs[0])])
    body = graph.upscaled_body(contract.inputs[1].name, 3, contract.scale, conditioning)
    graph.node("Tanh", [body], contract.outputs[0].name)


def _build_colorizer(graph: _Graph, contract: Contract) -> None:
    x = contract.inputs[0].name
    if contract.activation == "lab":
        body = graph.image_body(x, 3, None, contract.outputs[0].shape[1])  # type: ignore[arg-type]
        graph.node("Mul", [graph.node("Tanh", [body]), graph.constant(COLOUR_SPREAD)], contract.outputs[0].name)
        return
    unit = graph.node("Mul", [x, graph.constant(1 / 255)])
    body = graph.image_body(unit, 3, None)
    graph.node("Mul", [graph.node("Sigmoid", [body]), graph.constant(255.0)], contract.outputs[0].name)


EDITORS = {"age": _build_age, "colorizer": _build_colorizer}




# LivePortrait graphs: each output depends on every input (the images through strided convolutions, the keypoints
# through random projections), in the ranges the real models give (head angles of tens of degrees, expressions of a
# few hundredths, so that FaceFusion's expression limits clip some of them).

def _flat_image(graph: _Graph, x: str, steps: int) -> tuple[str, int]:
    """The image through `steps` 3x3 convolutions of stride 2, flattened: (name, width)."""
    channels, side = 3, 256
    for _ in range(steps):
        x = graph.node("Tanh", [graph.conv(x, channels, HIDDEN, 3, gain=2.0, stride=2)])
        channels, side = HIDDEN, side // 2
    return graph.node("Flatten", [x], axis=1), HIDDEN * side * side


def _projected(graph: _Graph, x: str, width: int, out: int, gain: float, spread: float = 1.5) -> str:
    """tanh of a random projection (weights of std spread / sqrt(width)) of the [1, width] row `x` to [1, out],
    times `gain`."""
    product = graph.node("Add", [graph.node("MatMul", [x, graph.weight((width, out), spread / np.sqrt(width))]),
                                 graph.weight((out,), 0.3)])
    return graph.node("Mul", [graph.node("Tanh", [product]), graph.constant(gain)])


def _build_lp_features(graph: _Graph, contract: Contract) -> None:
    x = contract.inputs[0].name
    for channels in (3, HIDDEN):
        x = graph.node("Tanh", [graph.conv(x, channels, HIDDEN, 3, gain=2.0, stride=2)])
    volume = graph.conv(x, HIDDEN, 32 * 16, 1, gain=1.5)
    graph.node("Reshape", [volume, graph.constant_ints((1, 32, 16, 64, 64))], contract.outputs[0].name)


LP_EXPRESSION_SPREAD = (0.015, 0.015, 0.0001) * 21
"""An expression's x, y and z values either side of 0: well inside LivePortrait's limits (FaceFusion's clip), so the
editor's moves show rather than being clipped away."""
LP_MOTION_PARTS = ((1, 25.0, 0.0), (1, 20.0, 0.0), (1, 15.0, 0.0), (1, 0.2, 1.0), (3, 0.05, 0.0),
                   (63, LP_EXPRESSION_SPREAD, 0.0), (63, 0.4, 0.0))
"""The motion extractor's outputs in order: (values, range either side, centre)."""


def _build_lp_motion(graph: _Graph, contract: Contract) -> None:
    flat, width = _flat_image(graph, contract.inputs[0].name, 5)
    for (count, spread, centre), tensor in zip(LP_MOTION_PARTS, contract.outputs, strict=True):
        values = graph.node("Mul", [_projected(graph, flat, width, count, 1.0), _constant(graph, [spread])])
        part = graph.node("Add", [values, graph.constant(centre)])
        graph.node("Reshape", [part, graph.constant_ints(tensor.shape)], tensor.name)


LP_FINE_GAIN = 400.0
"""The keypoints' difference also enters a sine at this gain: the finest expression edits move keypoints by
thousandths, and a sine, unlike a tanh, still shows them beside the head's turns (tenths)."""


def _points_row(graph: _Graph, names: Sequence[str]) -> tuple[str, str]:
    """The two [1, 21, 3] inputs flattened side by side with their difference scaled by 20, and the difference."""
    rows = [graph.node("Reshape", [name, graph.constant_ints((1, 63))]) for name in names]
    difference = graph.node("Sub", rows)
    scaled = graph.node("Mul", [difference, graph.constant(20.0)])
    return graph.node("Concat", [*rows, scaled], axis=1), difference


def _build_lp_generator(graph: _Graph, contract: Contract) -> None:
    volume, source, target = (tensor.name for tensor in contract.inputs)
    planar = graph.node("Reshape", [volume, graph.constant_ints((1, 512, 64, 64))])
    hidden = graph.conv(planar, 512, HIDDEN, 1, gain=2.0)
    row, difference = _points_row(graph, (source, target))
    coarse = _projected(graph, row, 3 * 63, HIDDEN, 2.0)
    fine = graph.node("Sin", [graph.node("MatMul", [graph.node("Mul", [difference, graph.constant(LP_FINE_GAIN)]),
                                                    graph.weight((63, HIDDEN), 1.0 / np.sqrt(63))])])
    motion = graph.node("Add", [coarse, fine])
    hidden = graph.node("Tanh", [graph.node("Add", [hidden, graph.node("Reshape", [
        motion, graph.constant_ints((1, HIDDEN, 1, 1))])])])
    detail = graph.conv(hidden, HIDDEN, 3 * 64, 3, gain=1.5)
    upscaled = graph.node("DepthToSpace", [detail], blocksize=8, mode="DCR")
    graph.node("Sigmoid", [upscaled], contract.outputs[0].name)


def _build_lp_stitcher(graph: _Graph, contract: Contract) -> None:
    source, target = (tensor.name for tensor in contract.inputs)
    change = _projected(graph, _points_row(graph, (source, target))[0], 3 * 63, 63, 0.01)
    moved = graph.node("Add", [graph.node("Reshape", [source, graph.constant_ints((1, 63))]), change])
    graph.node("Reshape", [moved, graph.constant_ints((1, 21, 3))], contract.outputs[0].name)


def _build_lp_retargeter(graph: _Graph, contract: Contract) -> None:
    row = contract.inputs[0]
    change = _projected(graph, row.name, int(row.shape[1]), 63, 0.05, spread=6.0)
    graph.node("Identity", [change], contract.outputs[0].name)


LIVE_PORTRAIT_BUILDERS = {"lp_features": _build_lp_features, "lp_motion": _build_lp_motion,
                          "lp_generator": _build_lp_generator, "lp_stitcher": _build_lp_stitcher,
                          "lp_retargeter": _build_lp_retargeter}


def worked_on(frame: np.ndarray) -> np.ndarray:
    """The frame the expression restorer is given as what the stages before it made of `frame` (uint8, RGB or BGR
    alike): the picture moved 2 px down and 3 px right, darkened and lifted, so its face reads another expression."""
    moved = np.roll(frame, (2, 3), axis=(0, 1)).astype(np.float64)
    return np.clip(np.rint(moved * 0.85 + 20.0), 0, 255).astype(np.uint8)

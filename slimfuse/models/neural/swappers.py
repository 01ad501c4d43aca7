"""Catalog entries: the face swappers users bring (none ships in a registry package; see the README).

Facts (FaceFusion 3.x's public model table and processors, insightface's reference code; read, not copied):
every swapper takes the target face aligned to its template as `target` [1, 3, S, S] (RGB, (x/255 - mean) / std)
and the source identity as `source`; the first output is the swapped face.

How the source goes in differs (see `RECIPES`):
- inswapper: the L2-normalised ArcFace embedding times the graph's last initializer (the 512 x 512 "emap"),
  normalised again.
- hyperswap: the L2-normalised ArcFace embedding.
- simswap: the ArcFace embedding through the `crossface_simswap` converter, normalised.
- ghost: the ArcFace embedding through the `crossface_ghost` converter, as it comes out.
- hififace: the ArcFace embedding through the `crossface_hififace` converter, normalised.
- blendswap, uniface: a picture of the source face (RGB / 255), aligned to its own template and size.

Output names other than inswapper's `output`, hyperswap's `output`/`mask` and the converters' `output` are not
confirmed from a public source; slimfuse reads the first output by position, and checks inputs only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from slimfuse.models.neural.recognizers import ARCFACE as RECOGNIZER
from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
HALF = (0.5, 0.5, 0.5)

SourceInput = Literal["emap", "embedding", "converted", "converted_normed", "image"]


@dataclass(frozen=True)
class SwapperRecipe:
    """How a swapper takes its source identity."""

    source: SourceInput
    family: str
    """FaceFusion's model type (inswapper, hyperswap, simswap, ghost, hififace, blendswap, uniface)."""
    converter: str | None = None
    """The embedding converter model (for "converted" and "converted_normed")."""
    source_template: str | None = None
    source_size: int | None = None
    """Alignment template and size of the source picture (for "image")."""



def _io(size: int, template: str, source: TensorSpec, mean: tuple[float, float, float] = (0.0, 0.0, 0.0),
        std: tuple[float, float, float] = (1.0, 1.0, 1.0), output_range: tuple[float, float] = (0.0, 1.0),
        companions: tuple[str, ...] = (RECOGNIZER,), extra_outputs: tuple[TensorSpec, ...] = ()) -> ModelIO:
    return ModelIO(
        inputs=(TensorSpec("target", (1, 3, size, size)), source),
        outputs=(TensorSpec("output", (1, 3, size, size)), *extra_outputs),
        template=template,
        crop_size=size,
        mean=mean,
        std=std,
        companions=companions,
        output_range=output_range,
    )


_EMBEDDING = TensorSpec("source", (1, 512))
_INSIGHTFACE = "non-commercial research only (InsightFace)"
_SIMSWAP = "non-commercial (SimSwap, neuralchen)"
_GHOST = "Apache-2.0 (GHOST, ai-forever)"
_HYPERSWAP = "ResearchRAIL (FaceFusion)"
_CROSSFACE = "OpenRAIL-MS (FaceFusion CrossFace)"
TARGET_NORMALISED = ("inswapper", "hyperswap", "simswap", "hififace")
"""Families whose --face-swapper-weight mixes in the target's normalised embedding (the others its raw one)."""


def _hyperswap(variant: str) -> ModelSpec:
    return neural_spec(
        f"hyperswap_{variant}_256", "swapper", _HYPERSWAP,
        f"HyperSwap {variant} face swapper, 256 px, ArcFace identity (shipped in fp16 inside)", "models-3.3.0",
        _io(256, "arcface_128", _EMBEDDING, HALF, HALF, (-1.0, 1.0),
            extra_outputs=(TensorSpec("mask", (1, 1, 256, 256)),)))


def _ghost(variant: int) -> ModelSpec:
    return neural_spec(
        f"ghost_{variant}_256", "swapper", _GHOST,
        f"GHOST {variant} face swapper, 256 px, identity through crossface_ghost", "models-3.0.0",
        _io(256, "arcface_112_v1", _EMBEDDING, HALF, HALF, (-1.0, 1.0), (RECOGNIZER, "crossface_ghost")))


def _converter(name: str, target: str) -> ModelSpec:
    return neural_spec(
        name, "embedding_converter", _CROSSFACE,
        f"converts an ArcFace (w600k_r50) embedding into the identity space {target} was trained with",
        "models-3.4.0",
        ModelIO(inputs=(TensorSpec("input", (1, 512)),), outputs=(TensorSpec("output", (1, 512)),)))


MODELS: tuple[ModelSpec, ...] = (
    neural_spec(
        "inswapper_128", "swapper", _INSIGHTFACE,
        "InsightFace inswapper, 128 px; the classic roop / FaceFusion swapper", "models-3.0.0",
        _io(128, "arcface_128", _EMBEDDING)),
    neural_spec(
        "inswapper_128_fp16", "swapper", _INSIGHTFACE,
        "inswapper_128 with fp16 weights (half the size; float32 inputs)", "models-3.0.0",
        _io(128, "arcface_128", _EMBEDDING)),
    _hyperswap("1a"),
    _hyperswap("1b"),
    _hyperswap("1c"),
    neural_spec(
        "simswap_256", "swapper", _SIMSWAP,
        "SimSwap face swapper, 256 px, identity through crossface_simswap", "models-3.0.0",
        _io(256, "arcface_112_v1", _EMBEDDING, IMAGENET_MEAN, IMAGENET_STD,
            companions=(RECOGNIZER, "crossface_simswap"))),
    neural_spec(
        "simswap_unofficial_512", "swapper", _SIMSWAP,
        "SimSwap 512 px (unofficial training), identity through crossface_simswap", "models-3.0.0",
        _io(512, "arcface_112_v1", _EMBEDDING, companions=(RECOGNIZER, "crossface_simswap"))),
    _ghost(1),
    _ghost(2),
    _ghost(3),
    neural_spec(
        "blendswap_256", "swapper", "non-commercial (BlendFace, mapooon)",
        "BlendSwap face swapper, 256 px; takes a 112 px picture of the source face", "models-3.0.0",
        _io(256, "ffhq_512", TensorSpec("source", (1, 3, 112, 112)), companions=())),
    neural_spec(
        "uniface_256", "swapper", "unknown (UniFace, xc-csc101)",
        "UniFace face swapper, 256 px; takes a 256 px picture of the source face", "models-3.0.0",
        _io(256, "ffhq_512", TensorSpec("source", (1, 3, 256, 256)), HALF, HALF, (-1.0, 1.0), companions=())),
    neural_spec(
        "hififace_unofficial_256", "swapper", "unknown (HifiFace, GuijiAI; unofficial training)",
        "HifiFace face swapper, 256 px (unofficial training), identity through crossface_hififace", "models-3.1.0",
        _io(256, "mtcnn_512", _EMBEDDING, HALF, HALF, (-1.0, 1.0), (RECOGNIZER, "crossface_hififace"))),
    _converter("crossface_simswap", "SimSwap"),
    _converter("crossface_ghost", "GHOST"),
    _converter("crossface_hififace", "HifiFace"),
)

RECIPES: dict[str, SwapperRecipe] = {
    "inswapper_128": SwapperRecipe("emap", "inswapper"),
    "inswapper_128_fp16": SwapperRecipe("emap", "inswapper"),
    "hyperswap_1a_256": SwapperRecipe("embedding", "hyperswap"),
    "hyperswap_1b_256": SwapperRecipe("embedding", "hyperswap"),
    "hyperswap_1c_256": SwapperRecipe("embedding", "hyperswap"),
    "simswap_256": SwapperRecipe("converted_normed", "simswap", "crossface_simswap"),
    "simswap_unofficial_512": SwapperRecipe("converted_normed", "simswap", "crossface_simswap"),
    "ghost_1_256": SwapperRecipe("converted", "ghost", "crossface_ghost"),
    "ghost_2_256": SwapperRecipe("converted", "ghost", "crossface_ghost"),
    "ghost_3_256": SwapperRecipe("converted", "ghost", "crossface_ghost"),
    "hififace_unofficial_256": SwapperRecipe("converted_normed", "hififace", "crossface_hififace"),
    "blendswap_256": SwapperRecipe("image", "blendswap", source_template="arcface_112_v2", source_size=112),
    "uniface_256": SwapperRecipe("image", "uniface", source_template="ffhq_512", source_size=256),
}

SWAPPER_NAMES: tuple[str, ...] = tuple(RECIPES)
PIXEL_BOOSTS: tuple[int, ...] = (128, 256, 384, 512, 768, 1024)
"""The sizes `--face-swapper-pixel-boost` takes (a multiple of the model's size: see slimfuse.processors.pixel_boost)."""

"""The words the model options take (`--face-swapper-model mesh`, `--face-detector-model auto`, the catalog's names),
and `NAME.VARIANT`: each model option also takes a stored variant of the model it names.

`--face-landmarker-model face_landmark.fp16`, `--face-detector-model short.int8` (both BlazeFace models for
`auto.fp16`), `--face-swapper-model inswapper_128.fp16`, ...: the option keeps its plain value (the run's code
asks for models by catalog name) and the pool loads the variant in the model's place, once the store has checked
it (sha256, the original it was made from, and a passed quality gate).
"""
from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from slimfuse.errors import UsageError
from slimfuse.models.neural.age_modifiers import AGE_MODIFIER_NAMES
from slimfuse.models.neural.background_removers import BACKGROUND_REMOVER_NAMES
from slimfuse.models.neural.detectors import DETECTOR_NAMES
from slimfuse.models.neural.enhancers import ENHANCER_NAMES
from slimfuse.models.neural.frame_colorizers import FRAME_COLORIZER_NAMES
from slimfuse.models.neural.frame_enhancers import FRAME_ENHANCER_NAMES
from slimfuse.models.neural.lip_syncers import LIP_SYNCER_NAMES
from slimfuse.models.neural.voice_extractors import VOICE_EXTRACTOR_NAMES
from slimfuse.models.neural.masks import OCCLUDER_NAMES, PARSER_NAMES
from slimfuse.models.neural.recognizers import ARCFACE
from slimfuse.models.neural.swappers import SWAPPER_NAMES
from slimfuse.models.variants import VARIANTS

MESH_SWAPPER = "mesh"
"""The embedded landmark-mesh swapper, the --face-swapper-model that names no ONNX model."""
NO_MODEL = "none"
"""The enhancer options' value for no enhancer."""
LANDMARKER_MODELS: tuple[str, ...] = ("face_landmark",)
BLAZEFACE = MappingProxyType({"short": "face_detection_short_range", "full": "face_detection_full_range"})
"""The embedded BlazeFace detectors by their option's word, and their catalog models."""
BLAZEFACE_MODELS: tuple[str, ...] = ("short", "full", "auto")
"""The words `--face-detector-model` takes for BlazeFace (auto: both); it also takes the neural detectors of the
catalog (slimfuse.models.neural.detectors)."""
SELFIE_SEGMENTATION = "selfie_segmentation"
"""The embedded background remover (MediaPipe's selfie segmentation)."""
DLIB = "dlib"
RECOGNIZERS: tuple[str, ...] = (DLIB, ARCFACE)
NOT_MODELS = frozenset({MESH_SWAPPER, NO_MODEL, DLIB})
"""Choices that name no ONNX model (the mesh swapper, no enhancer, dlib's recognizer): they have no variants."""


def split_choice(value: str, choices: Sequence[str]) -> tuple[str, str | None]:
    """("short", "fp16") for "short.fp16"; (value, None) for a plain choice; ValueError otherwise (choices may hold
    dots themselves, gfpgan_1.4, so the variant is what follows the last one)."""
    plain = list(choices)  # a plain list: ModelChoices' own `in` takes variants too
    if value in plain:
        return value, None
    base, dot, variant = value.rpartition(".")
    if dot and base in plain and base not in NOT_MODELS and variant in VARIANTS:
        return base, variant
    raise ValueError(value)


class ModelChoices(list[str]):
    """An option's choices (argparse lists and checks them): the plain choices, and CHOICE.VARIANT for each."""

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, str):
            return False
        try:
            split_choice(value, list(self))
        except ValueError:
            return False
        return True


MODEL_CHOICES: dict[str, ModelChoices] = {
    "face_swapper_model": ModelChoices([MESH_SWAPPER, *SWAPPER_NAMES]),
    "face_detector_model": ModelChoices([*BLAZEFACE_MODELS, *DETECTOR_NAMES]),
    "face_landmarker_model": ModelChoices(LANDMARKER_MODELS),
    "face_enhancer_model": ModelChoices([NO_MODEL, *ENHANCER_NAMES]),
    "face_recognizer_model": ModelChoices(RECOGNIZERS),
    "frame_enhancer_model": ModelChoices([NO_MODEL, *FRAME_ENHANCER_NAMES]),
    "face_occluder_model": ModelChoices(OCCLUDER_NAMES),
    "face_parser_model": ModelChoices(PARSER_NAMES),
    "age_modifier_model": ModelChoices(AGE_MODIFIER_NAMES),
    "frame_colorizer_model": ModelChoices(FRAME_COLORIZER_NAMES),
    "lip_syncer_model": ModelChoices(LIP_SYNCER_NAMES),
    "voice_extractor_model": ModelChoices([NO_MODEL, *VOICE_EXTRACTOR_NAMES]),
    "background_remover_model": ModelChoices([SELFIE_SEGMENTATION, *BACKGROUND_REMOVER_NAMES]),
}
"""The options that name a model, and their choices; each also takes CHOICE.VARIANT, a stored variant."""


def catalog_models(option: str, choice: str) -> tuple[str, ...]:
    """The catalog models an option's choice runs (BlazeFace's short / full / auto stand for one or two)."""
    if choice in NOT_MODELS:
        return ()
    if option == "face_detector_model" and choice in BLAZEFACE_MODELS:
        return tuple(BLAZEFACE.values()) if choice == "auto" else (BLAZEFACE[choice],)
    return (choice,)


def split_variants(options: dict[str, object]) -> tuple[dict[str, object], tuple[tuple[str, str], ...]]:
    """The model options with `.VARIANT` stripped, and the (catalog name, NAME.VARIANT) pairs the pool loads in
    those models' place. A value that is neither a choice nor CHOICE.VARIANT is a UsageError naming the option."""
    plain = dict(options)
    chosen: dict[str, str] = {}
    for option, choices in MODEL_CHOICES.items():
        value = plain.get(option)
        if not isinstance(value, str):
            continue
        try:
            base, variant = split_choice(value, choices)
        except ValueError:
            raise UsageError(detail=f"--{option.replace('_', '-')}: invalid choice: {value!r} (choose from "
                             f"{', '.join(map(repr, choices))}, or CHOICE.VARIANT)") from None
        plain[option] = base
        if variant is not None:
            for model in catalog_models(option, base):
                chosen[model] = f"{model}.{variant}"
    return plain, tuple(sorted(chosen.items()))

"""The stage registry: for each processor --processors may list (FaceFusion's names), what kind of stage it is, the
catalog models it loads (what the memory plan and the fetch read, before anything is loaded) and how it is built on
a run's pool. Adding a processor is one entry here, its options' section in config.py and its processor module.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Literal, TypeVar

from slimfuse.config import RunConfig
from slimfuse.errors import UsageError
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.catalog import Catalog
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.models.neural.frame_enhancers import SCALES
from slimfuse.models.neural.live_portrait import EDITOR_MODELS, RESTORER_MODELS
from slimfuse.models.pool import ModelPool
from slimfuse.processors.age_modify import AgeModifierProcessor
from slimfuse.processors.background import BackgroundRemover
from slimfuse.processors.base import FaceProcessor, FrameProcessor
from slimfuse.processors.deep_swap import DeepSwapProcessor
from slimfuse.processors.enhance import EnhanceProcessor
from slimfuse.processors.frame_colorize import FrameColorizer
from slimfuse.processors.frame_enhance import FrameEnhanceOptions, FrameEnhancer
from slimfuse.processors.lip_sync import LipSyncProcessor, read_sound
from slimfuse.processors.live_portrait.editor import FaceEditor
from slimfuse.processors.live_portrait.restorer import ExpressionRestorer
from slimfuse.processors.mesh_processor import MeshSwapProcessor
from slimfuse.processors.mesh_swap import EyeLandmarker
from slimfuse.processors.onnx_swap import OnnxSwapProcessor
from slimfuse.processors.paste_masks import FaceMasker
from slimfuse.processors.voice_extract import VoiceExtractor

StageKind = Literal["face", "frame"]
Built = TypeVar("Built")
EYE_MODEL = "iris_landmark"  # the mesh swapper's lid lines


@dataclass(frozen=True)
class StageContext:
    """What a stage is built from: the run's options, its pool and batcher, the sizes its plan capped, the run's
    paste-back masker and the face mesh's topology."""

    config: RunConfig
    pool: ModelPool
    batcher: AdaptiveBatcher
    face_size: int
    pixel_boost: int | None
    frame_tile: int
    masker: FaceMasker
    topology: MeshTopology


@dataclass(frozen=True)
class StageEntry:
    kind: StageKind
    models: Callable[[RunConfig, Catalog], tuple[str, ...]]
    """Every catalog model the stage loads, in the order it uses them."""
    build: Callable[[StageContext], FaceProcessor | FrameProcessor]
    """The stage on the run's pool: a FaceProcessor for a face stage, a FrameProcessor for a frame stage. A bad
    option the section could not see alone is a UsageError naming it."""


def _checked(flag: str, value: object, build: Callable[[], Built]) -> Built:
    """What `build` makes; its ValueError (a model that is not of the stage's kind, a bad combination) as a usage
    error naming the option and its value."""
    try:
        return build()
    except ValueError as exc:
        raise UsageError(detail=f"--{flag} {value}: {exc}") from exc


def _with_companions(model: str, catalog: Catalog) -> tuple[str, ...]:
    io = catalog.get(model).io
    return (model, *(io.companions if io is not None else ()))


def _swapper_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    if not config.swap.neural:
        return (EYE_MODEL,)
    return (*_with_companions(config.swap.face_swapper_model, catalog), *FaceMasker.models_for(config.masks))


def _build_swapper(context: StageContext) -> FaceProcessor:
    swap = context.config.swap
    if not swap.neural:
        return _checked("face-swapper-model", swap.face_swapper_model,
                        lambda: MeshSwapProcessor(context.topology, swap, context.face_size,
                                                  EyeLandmarker(partial(context.pool.session, EYE_MODEL))))
    return _checked("face-swapper-model", swap.face_swapper_model,
                    lambda: OnnxSwapProcessor(context.pool, swap, context.pixel_boost, context.masker, context.batcher))


def _enhancer_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    model = config.enhance.face_enhancer
    if model is None:
        return ()
    return (*_with_companions(model, catalog), *FaceMasker.models_for(config.masks))


def _build_enhancer(context: StageContext) -> FaceProcessor:
    enhance = context.config.enhance
    return _checked("face-enhancer-model", enhance.face_enhancer,
                    lambda: EnhanceProcessor(context.pool, enhance, context.masker.for_enhancer(), context.batcher))


def _frame_enhancer_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    model = config.enhance.frame_enhancer
    return () if model is None else (model,)


def _build_frame_enhancer(context: StageContext) -> FrameProcessor:
    enhance = context.config.enhance
    model = enhance.frame_enhancer_model
    try:
        tiling = FrameEnhanceOptions.of(enhance, context.frame_tile)
    except ValueError as exc:
        raise UsageError(detail=f"--frame-enhancer-tile-size / --frame-enhancer-tile-overlap: {exc}") from exc
    return FrameEnhancer(partial(context.pool.session, model), SCALES[model], tiling, model)


def _deep_swapper_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    return (config.deep_swap.model, *FaceMasker.models_for(config.masks))


def _build_deep_swapper(context: StageContext) -> FaceProcessor:
    options = context.config.deep_swap
    return _checked("deep-swapper-model", options.model,
                    lambda: DeepSwapProcessor(context.pool, options, context.masker, context.batcher))


def _age_modifier_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    return (*AgeModifierProcessor.models_for(config.age_modifier.age_modifier_model),
            *FaceMasker.models_for(config.masks))


def _build_age_modifier(context: StageContext) -> FaceProcessor:
    options = context.config.age_modifier
    return _checked("age-modifier-model", options.age_modifier_model,
                    lambda: AgeModifierProcessor(context.pool, options, context.masker.for_enhancer(), context.batcher))


def _frame_colorizer_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    return (config.frame_colorizer.frame_colorizer_model,)


def _build_frame_colorizer(context: StageContext) -> FrameProcessor:
    options = context.config.frame_colorizer
    return _checked("frame-colorizer-model", options.frame_colorizer_model,
                    lambda: FrameColorizer(context.pool, options))


def _restorer_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    return (*RESTORER_MODELS[config.expression_restorer.expression_restorer_model], *FaceMasker.models_for(config.masks))


def _build_restorer(context: StageContext) -> FaceProcessor:
    return ExpressionRestorer(context.pool, context.config.expression_restorer, context.masker.for_enhancer())


def _editor_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    return EDITOR_MODELS[config.face_editor.face_editor_model]


def _build_editor(context: StageContext) -> FaceProcessor:
    return FaceEditor(context.pool, context.config.face_editor, context.masker.box_only())


def _lip_syncer_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    extractor = config.lip_sync.voice_extractor
    occlusion = "occlusion" in config.masks.face_mask_types
    return (*((extractor,) if extractor is not None else ()), config.lip_sync.lip_syncer_model,
            *((config.masks.face_occluder_model,) if occlusion else ()))


def _build_lip_syncer(context: StageContext) -> FaceProcessor:
    config = context.config
    sound = config.sound
    extractor = config.lip_sync.voice_extractor
    separate = None
    if extractor is not None:
        separate = VoiceExtractor(partial(context.batcher.run, extractor))
    voice = read_sound(sound, separate)
    assert sound is not None
    return _checked("lip-syncer-model", config.lip_sync.lip_syncer_model,
                    lambda: LipSyncProcessor(context.pool, config.lip_sync, config.masks, voice, sound, context.batcher))


def _background_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    return (config.background.background_remover_model,)


def _build_background_remover(context: StageContext) -> FrameProcessor:
    model = context.config.background.background_remover_model
    return BackgroundRemover(partial(context.pool.session, model), model, context.config.background)


STAGES: Mapping[str, StageEntry] = MappingProxyType({
    "face_swapper": StageEntry("face", _swapper_models, _build_swapper),
    "face_enhancer": StageEntry("face", _enhancer_models, _build_enhancer),
    "frame_enhancer": StageEntry("frame", _frame_enhancer_models, _build_frame_enhancer),
    "deep_swapper": StageEntry("face", _deep_swapper_models, _build_deep_swapper),
    "age_modifier": StageEntry("face", _age_modifier_models, _build_age_modifier),
    "frame_colorizer": StageEntry("frame", _frame_colorizer_models, _build_frame_colorizer),
    "expression_restorer": StageEntry("face", _restorer_models, _build_restorer),
    "face_editor": StageEntry("face", _editor_models, _build_editor),
    "lip_syncer": StageEntry("face", _lip_syncer_models, _build_lip_syncer),
    "background_remover": StageEntry("frame", _background_models, _build_background_remover),
})
"""Every stage but the face debugger, which draws last what the others did (pipeline/chain.py); one for each of
config.SLIMFUSE_PROCESSORS."""

"""The stage registry: for each processor --processors may list (FaceFusion's names), what kind of stage it is, the
catalog models it loads (what the memory plan and the fetch read, before anything is loaded) and how it is built on
a run's pool. Adding a processor is one entry here, its options' section in config.py and its processor module.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Literal

from slimfuse.config import RunConfig
from slimfuse.errors import UsageError
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.catalog import Catalog
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.models.neural.frame_enhancers import SCALES
from slimfuse.models.pool import ModelPool
from slimfuse.processors.base import FaceProcessor, FrameProcessor
from slimfuse.processors.enhance import EnhanceProcessor
from slimfuse.processors.frame_enhance import FrameEnhanceOptions, FrameEnhancer
from slimfuse.processors.mesh_processor import MeshSwapProcessor
from slimfuse.processors.mesh_swap import EyeLandmarker
from slimfuse.processors.onnx_swap import OnnxSwapProcessor
from slimfuse.processors.paste_masks import FaceMasker

StageKind = Literal["face", "frame"]
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


def _with_companions(model: str, catalog: Catalog) -> tuple[str, ...]:
    io = catalog.get(model).io
    return (model, *(io.companions if io is not None else ()))


def _swapper_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    if not config.swap.neural:
        return (EYE_MODEL,)
    return (*_with_companions(config.swap.face_swapper_model, catalog), *FaceMasker.models_for(config.masks))


def _build_swapper(context: StageContext) -> FaceProcessor:
    swap = context.config.swap
    try:
        if not swap.neural:
            return MeshSwapProcessor(context.topology, swap, context.face_size,
                                     EyeLandmarker(context.pool.session(EYE_MODEL)))
        return OnnxSwapProcessor(context.pool, swap, context.pixel_boost, context.masker, context.batcher)
    except ValueError as exc:
        raise UsageError(detail=f"--face-swapper-model {swap.face_swapper_model}: {exc}") from exc


def _enhancer_models(config: RunConfig, catalog: Catalog) -> tuple[str, ...]:
    model = config.enhance.face_enhancer
    if model is None:
        return ()
    return (*_with_companions(model, catalog), *FaceMasker.models_for(config.masks))


def _build_enhancer(context: StageContext) -> FaceProcessor:
    enhance = context.config.enhance
    try:
        return EnhanceProcessor(context.pool, enhance, context.masker.for_enhancer(), context.batcher)
    except ValueError as exc:
        raise UsageError(detail=f"--face-enhancer-model {enhance.face_enhancer}: {exc}") from exc


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


STAGES: Mapping[str, StageEntry] = MappingProxyType({
    "face_swapper": StageEntry("face", _swapper_models, _build_swapper),
    "face_enhancer": StageEntry("face", _enhancer_models, _build_enhancer),
    "frame_enhancer": StageEntry("frame", _frame_enhancer_models, _build_frame_enhancer),
})
"""Every stage but the face debugger, which draws last what the others did (pipeline/chain.py); one for each of
config.SLIMFUSE_PROCESSORS."""

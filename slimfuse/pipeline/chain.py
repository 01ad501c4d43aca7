"""The processor chain: the face processors (swapper, then enhancer) and the frame enhancer a run applies to each
frame, described before anything is loaded (`ChainSpec`: what the memory plan reads) and built on the run's pool
(`Chain`: what the frame loop calls).

A face processor cuts each selected face out of the frame, processes the crops of a batch of frames at once and
pastes each result back through the inverse of its crop transform; the frame enhancer then sees the whole frame.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from slimfuse.config import MaskSettings, RunConfig
from slimfuse.errors import UsageError
from slimfuse.faces.mesh_topology import MeshTopology
from slimfuse.faces.track import Track
from slimfuse.faces.types import Face
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.frame_enhancers import SCALES
from slimfuse.models.pool import ModelPool
from slimfuse.pipeline.residency import Residency
from slimfuse.pipeline.reuse import ReuseCache, Slot
from slimfuse.processors.base import FaceCrop, FaceProcessor, SourcePhoto
from slimfuse.processors.blend import paste_back
from slimfuse.processors.enhance import EnhanceProcessor
from slimfuse.processors.paste_masks import FaceMasker
from slimfuse.processors.frame_enhance import FrameEnhanceOptions, FrameEnhancer
from slimfuse.processors.mesh_processor import MeshSwapProcessor
from slimfuse.processors.mesh_swap import MeshSwapOptions
from slimfuse.processors.onnx_swap import OnnxSwapProcessor

TOPOLOGY = "face_mesh_topology"
Stage = Literal["swapper", "face_enhancer"]
"""A face processor's place in the chain: what switches it off and on while frames go through (live mode)."""


@dataclass(frozen=True)
class Target:
    """A face to process in one frame, and the track it belongs to (what reuse keys on)."""

    track_id: int
    face: Face

    @classmethod
    def of(cls, track: Track) -> Target:
        return cls(track.id, track.face)


@dataclass(frozen=True)
class ChainSpec:
    """Which processors a run applies, from its options: nothing is loaded to know it."""

    swapper: str | None
    """A neural swapper's catalog name; None: the embedded mesh swapper."""
    face_enhancer: str | None
    frame_enhancer: str | None
    masks: MaskSettings

    @classmethod
    def of(cls, config: RunConfig) -> ChainSpec:
        swap, enhance = config.swap, config.enhance
        return cls(swapper=swap.face_swapper_model if swap.neural else None, face_enhancer=enhance.face_enhancer,
                   frame_enhancer=enhance.frame_enhancer, masks=config.masks)

    def models(self, catalog: Catalog) -> tuple[str, ...]:
        """Every catalog model the chain's processors load, each once, in the order they are used."""
        names: list[str] = []
        for model in (self.swapper, self.face_enhancer):
            if model is not None:
                io = catalog.get(model).io
                names += [model, *(io.companions if io is not None else ())]
        if self.swapper is not None or self.face_enhancer is not None:
            masks = self.masks
            names += FaceMasker.models_for(masks.face_mask_types, masks.face_occluder_model, masks.face_parser_model)
        if self.frame_enhancer is not None:
            names.append(self.frame_enhancer)
        return tuple(dict.fromkeys(names))

    def build(self, config: RunConfig, pool: ModelPool, batcher: AdaptiveBatcher, face_size: int,
              pixel_boost: int | None, frame_tile: int, residency: Residency) -> Chain:
        """The processors on the run's pool; face_size, pixel_boost and frame_tile as the run's plan capped them."""
        topology = MeshTopology.from_json(pool.store.path(TOPOLOGY).read_text(encoding="utf-8"))
        masker = _masker(self.masks, pool, topology)
        processors: list[tuple[Stage, FaceProcessor]] = []
        if self.swapper is None:
            swap = config.swap
            options = MeshSwapOptions(keep_mouth=swap.keep_mouth, keep_eyes=swap.keep_eyes, eye_region=swap.eye_region,
                                      keep_occluders=swap.keep_occluders,
                                      remove_source_glasses=swap.remove_source_glasses, blend=swap.blend)
            processors.append(("swapper", MeshSwapProcessor(topology, options, face_size)))
        else:
            try:
                processors.append(("swapper", OnnxSwapProcessor(pool, self.swapper, pixel_boost, masker, batcher)))
            except ValueError as exc:
                raise UsageError(detail=f"--face-swapper-model {self.swapper}: {exc}") from exc
        if self.face_enhancer is not None:
            enhance = config.enhance
            try:
                processors.append(("face_enhancer", EnhanceProcessor(
                    pool, self.face_enhancer, enhance.face_enhancer_blend, enhance.face_enhancer_weight,
                    masker.for_enhancer(), batcher)))
            except ValueError as exc:
                raise UsageError(detail=f"--face-enhancer-model {self.face_enhancer}: {exc}") from exc
        frame = None if self.frame_enhancer is None else _frame_enhance_options(config, frame_tile)
        return Chain(pool, processors, self.frame_enhancer, frame, residency)


class Chain:
    """The built processors of a run. `prepare` once a run; `render` for each batch of frames. A stage switched off
    (`switch`) passes its faces through untouched until it is switched on again."""

    def __init__(self, pool: ModelPool, processors: Sequence[tuple[Stage, FaceProcessor]], frame_model: str | None,
                 frame_options: FrameEnhanceOptions | None, residency: Residency) -> None:
        self.pool = pool
        self.stages: tuple[Stage, ...] = tuple(stage for stage, _ in processors)
        self.processors: list[FaceProcessor] = [processor for _, processor in processors]
        self._off: set[Stage] = set()
        self.frame_model = frame_model
        self.frame_options = frame_options
        self.residency = residency

    @property
    def preparation_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for processor in self.processors for name in processor.preparation_models))

    @property
    def frame_scale(self) -> int:
        """How much larger the chain's frames come out than they went in (the frame enhancer's kept scale)."""
        if self.frame_model is None or self.frame_options is None or not self.frame_options.keep_scale:
            return 1
        return SCALES[self.frame_model]

    def resize_faces(self, face_size: int) -> None:
        """Process faces at most at `face_size` from the next frame on (the mesh swapper's target face size; the
        neural processors keep their model's size)."""
        for processor in self.processors:
            if isinstance(processor, MeshSwapProcessor):
                processor.max_face_size = face_size

    def has(self, stage: Stage) -> bool:
        return stage in self.stages

    def is_on(self, stage: Stage) -> bool:
        return self.has(stage) and stage not in self._off

    def switch(self, stage: Stage, on: bool) -> None:
        """Run the stage's processor (on) or skip it (off) from the next frame on. ValueError for a stage the chain
        does not have."""
        if not self.has(stage):
            raise ValueError(f"the chain has no {stage.replace('_', ' ')}")
        if on:
            self._off.discard(stage)
        else:
            self._off.add(stage)

    @property
    def can_keep_mouth(self) -> bool:
        """Whether the chain's swapper can keep the target's mouth or swap it while frames go through (the mesh
        swapper; a neural swapper's paste-back masks have no mouth of their own)."""
        return any(isinstance(processor, MeshSwapProcessor) for processor in self.processors)

    def keep_mouth(self, keep: bool) -> None:
        """Keep the target's mouth interior (or swap it too) from the next frame on. ValueError when the chain's
        swapper cannot (see can_keep_mouth)."""
        if not self.can_keep_mouth:
            raise ValueError("the swapper cannot keep the target's mouth")
        for processor in self.processors:
            if isinstance(processor, MeshSwapProcessor):
                processor.keep_mouth(keep)

    def prepare(self, photos: Sequence[SourcePhoto]) -> list[object]:
        """Each processor's state from the source photos (a texture, an embedding); every model is loaded and
        checked here, before any frame is worked on."""
        prepared = []
        for processor in self.processors:
            prepared.append(processor.prepare(photos))
            self.residency.after_stage(processor)
        if self.frame_model is not None:
            self.pool.session(self.frame_model)
        return prepared

    def render(self, chunk: Sequence[tuple[np.ndarray, Sequence[Target]]], prepared: Sequence[object],
               reuse: ReuseCache, overwrite: bool = False) -> list[np.ndarray]:
        """Each frame with its targets processed, frames in order: each processor runs over the whole chunk (its
        crops batched together) before the next, then the frame enhancer over each frame. A frame is copied once,
        at its first face, and every face pasted into that copy; with `overwrite` (frames the caller owns and no
        longer needs) not even once."""
        frames = [rgb for rgb, _ in chunk]
        owned = [overwrite] * len(frames)
        for index, (stage, processor, state) in enumerate(zip(self.stages, self.processors, prepared, strict=True)):
            if stage in self._off:
                continue
            placed: list[tuple[int, FaceCrop, Slot]] = []
            fresh: list[tuple[FaceCrop, Slot]] = []
            for number, (_, targets) in enumerate(chunk):
                for target in targets:
                    crop = processor.crop(frames[number], target.face)
                    claim = reuse.claim((target.track_id, index), crop)
                    placed.append((number, crop, claim.slot))
                    if claim.fresh:
                        fresh.append((crop, claim.slot))
            if fresh:
                results = processor.process([crop for crop, _ in fresh], state)
                for (_, slot), result in zip(fresh, results, strict=True):
                    slot.result = result
            for number, crop, slot in placed:
                result = slot.fitted(crop.image.shape[:2])
                frames[number] = paste_back(frames[number], result.image, result.alpha, crop.crop_from_frame,
                                            in_place=owned[number])
                owned[number] = True
            self.residency.after_stage(processor)
        return [self._enhance_frame(frame) for frame in frames]

    def _enhance_frame(self, frame: np.ndarray) -> np.ndarray:
        if self.frame_model is None or self.frame_options is None:
            return frame
        return FrameEnhancer(self.pool.session(self.frame_model), SCALES[self.frame_model],
                             self.frame_options).enhance(frame)


def _masker(masks: MaskSettings, pool: ModelPool, topology: MeshTopology) -> FaceMasker:
    try:
        return FaceMasker(pool, masks.mask_options(), topology.face_oval, masks.face_occluder_model,
                          masks.face_parser_model, masks.face_mask_regions)
    except ValueError as exc:
        raise UsageError(detail=f"face masks: {exc}") from exc


def _frame_enhance_options(config: RunConfig, tile: int) -> FrameEnhanceOptions:
    enhance = config.enhance
    try:
        return FrameEnhanceOptions(tile_size=tile, overlap=enhance.frame_enhancer_tile_overlap,
                                   blend=enhance.frame_enhancer_blend, keep_scale=enhance.frame_enhancer_keep_scale)
    except ValueError as exc:
        raise UsageError(detail=f"--frame-enhancer-tile-size / --frame-enhancer-tile-overlap: {exc}") from exc

"""The processor chain: the stages a run applies to each frame, in --processors order (face stages such as the
swapper and the enhancer, frame stages such as the frame enhancer), then the face debugger; described before anything
is loaded (`ChainSpec`: what the memory plan reads) and built on the run's pool (`Chain`: what the frame loop calls).

A face stage cuts each selected face out of the frame, processes the crops of a batch of frames at once and pastes
each result back through the inverse of its crop transform; a frame stage sees the whole frame; the face debugger
draws last what the face stages were given and did. Which processors exist is pipeline/stages.py's registry.
What live controls change while frames go through is asked of the processors' capabilities (KeepsMouth,
SizedFaces), never of their classes.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, NamedTuple

import numpy as np

from slimfuse.config import MaskOptions, RunConfig
from slimfuse.errors import UsageError
from slimfuse.faces.track import Track
from slimfuse.faces.types import Face
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.catalog import Catalog
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.models.pool import ModelPool
from slimfuse.pipeline.residency import Residency
from slimfuse.pipeline.reuse import ReuseCache, Slot
from slimfuse.pipeline.stages import STAGES, StageContext
from slimfuse.processors.base import (ChangesOverTime, FaceCrop, FaceProcessor, FrameProcessor, KeepsMouth, Processed,
                                      ReadsOriginal, SizedFaces, SourcePhoto, State)
from slimfuse.processors.blend import paste_back
from slimfuse.processors.debug import FaceDebugger, FaceMark
from slimfuse.processors.paste_masks import FaceMasker

TOPOLOGY = "face_mesh_topology"
DEBUGGER = "face_debugger"
Stage = str
"""A stage's name, FaceFusion's processor name (face_swapper, face_enhancer, frame_enhancer, face_debugger, ...):
what switches it off and on while frames go through (live mode)."""


@dataclass(frozen=True)
class Target:
    """A face to process in one frame, and the track it belongs to (what reuse keys on)."""

    track_id: int
    face: Face

    @classmethod
    def of(cls, track: Track) -> Target:
        return cls(track.id, track.face)


@dataclass(frozen=True)
class Prepared(Generic[State]):
    """A face processor with what it prepared from the source photos: what rendering runs."""

    stage: Stage
    processor: FaceProcessor[State]
    state: State

    def process(self, crops: Sequence[FaceCrop]) -> list[Processed]:
        return self.processor.process(crops, self.state)


PreparedChain = tuple[Prepared[Any], ...]
"""Every face processor of a chain with its state from one person's photos (another person: another one)."""


@dataclass(frozen=True)
class ChainSpec:
    """Which stages a run applies, in order, from its options: nothing is loaded to know it."""

    config: RunConfig

    @classmethod
    def of(cls, config: RunConfig) -> ChainSpec:
        """The chain of `config`; UsageError for an order it cannot run: a face stage after the frame enhancer
        that enlarged the frame its faces were found in."""
        stages = config.stages
        if config.enhance.frame_enhancer_keep_scale and "frame_enhancer" in stages:
            later = stages[stages.index("frame_enhancer"):]
            if any(stage in STAGES and STAGES[stage].kind == "face" for stage in later):
                raise UsageError(detail="--processors: list frame_enhancer after the face stages, as it enlarges the "
                                 "frame their faces were found in (or leave out --frame-enhancer-keep-scale)")
        return cls(config)

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages frames go through, in order (the face debugger not among them: it draws last)."""
        return tuple(stage for stage in self.config.stages if stage != DEBUGGER)

    @property
    def works_on_faces(self) -> bool:
        """Whether a stage needs the frame's faces (a face stage, the face debugger): a chain of frame stages alone
        finds no faces, so its run loads no face models."""
        return DEBUGGER in self.config.stages or any(STAGES[stage].kind == "face" for stage in self.stages)

    def models(self, catalog: Catalog) -> tuple[str, ...]:
        """Every catalog model the chain's processors load, each once, in the order they are used."""
        return tuple(dict.fromkeys(name for stage in self.stages for name in STAGES[stage].models(self.config,
                                                                                                 catalog)))

    def build(self, pool: ModelPool, batcher: AdaptiveBatcher, face_size: int, pixel_boost: int | None,
              frame_tile: int, residency: Residency) -> Chain:
        """The processors on the run's pool; face_size, pixel_boost and frame_tile as the run's plan capped them."""
        topology = MeshTopology.from_json(pool.store.path(TOPOLOGY).read_text(encoding="utf-8"))
        context = StageContext(self.config, pool, batcher, face_size, pixel_boost, frame_tile,
                               _masker(self.config.masks, pool, topology), topology)
        built = [(stage, STAGES[stage].build(context)) for stage in self.stages]
        debugger = FaceDebugger(self.config.swap.face_debugger_items) if self.config.swap.debugger else None
        return Chain(pool, built, residency, debugger)


class FrameWork(NamedTuple):
    """A frame to render: its pixels, the faces to process in it, and its time in seconds (0 for an image)."""

    rgb: np.ndarray
    targets: Sequence[Target]
    time: float = 0.0


class Chain:
    """The built stages of a run, in order. `prepare` once a run (and once for each other person live mode switches
    to); `render` for each batch of frames. A stage switched off (`switch`) passes its frames through untouched
    until it is switched on again."""

    def __init__(self, pool: ModelPool, stages: Sequence[tuple[Stage, FaceProcessor[Any] | FrameProcessor]],
                 residency: Residency, debugger: FaceDebugger | None = None) -> None:
        self.pool = pool
        self.stages = tuple(stages)
        self.debugger = debugger
        self.residency = residency
        self._off: set[Stage] = set()

    @property
    def processors(self) -> tuple[FaceProcessor[Any], ...]:
        """The face stages' processors, in order."""
        return tuple(processor for stage, processor in self.stages if STAGES[stage].kind == "face")  # type: ignore[misc]

    @property
    def works_on_faces(self) -> bool:
        """Whether a stage of the chain needs faces (a face stage, the face debugger): a chain of frame stages alone
        works on any frame."""
        return bool(self.processors) or self.debugger is not None

    @property
    def frame_processors(self) -> tuple[FrameProcessor, ...]:
        return tuple(processor for stage, processor in self.stages if STAGES[stage].kind == "frame")  # type: ignore[misc]

    @property
    def preparation_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for processor in self.processors for name in processor.preparation_models))

    @property
    def frame_scale(self) -> int:
        """How much larger the chain's frames come out than they went in (a frame enhancer's kept scale)."""
        return int(np.prod([processor.frame_scale for processor in self.frame_processors]))

    def resize_faces(self, face_size: int) -> None:
        """Process faces at most at `face_size` from the next frame on (the mesh swapper's target face size; the
        neural processors keep their model's size)."""
        for processor in self.processors:
            if isinstance(processor, SizedFaces):
                processor.resize(face_size)

    def has(self, stage: Stage) -> bool:
        if stage == DEBUGGER:
            return self.debugger is not None
        return any(name == stage for name, _ in self.stages)

    def is_on(self, stage: Stage) -> bool:
        return self.has(stage) and stage not in self._off

    def switch(self, stage: Stage, on: bool) -> None:
        """Run the stage (on) or skip it (off) from the next frame on. ValueError for a stage the chain does not
        have."""
        if not self.has(stage):
            raise ValueError(f"the chain has no {stage.replace('_', ' ')}")
        if on:
            self._off.discard(stage)
        else:
            self._off.add(stage)

    @property
    def can_keep_mouth(self) -> bool:
        """Whether a processor of the chain can keep the target's mouth or swap it while frames go through (the mesh
        swapper; a neural swapper's paste-back masks have no mouth of their own)."""
        return any(isinstance(processor, KeepsMouth) for processor in self.processors)

    def keep_mouth(self, keep: bool) -> None:
        """Keep the target's mouth interior (or swap it too) from the next frame on. ValueError when no processor
        can (see can_keep_mouth)."""
        if not self.can_keep_mouth:
            raise ValueError("the swapper cannot keep the target's mouth")
        for processor in self.processors:
            if isinstance(processor, KeepsMouth):
                processor.keep_mouth(keep)

    def prepare(self, photos: Sequence[SourcePhoto]) -> PreparedChain:
        """Each face stage with its state from the source photos (a texture, an embedding; none without photos);
        every model is loaded and checked here, before any frame is worked on."""
        prepared = []
        for stage, processor in self.stages:
            if STAGES[stage].kind == "frame":
                processor.load()  # type: ignore[union-attr]
                continue
            face_processor: FaceProcessor[Any] = processor  # type: ignore[assignment]
            prepared.append(Prepared(stage, face_processor, face_processor.prepare(photos)))
            self.residency.after_stage(face_processor.generator_models)
        return tuple(prepared)

    def render(self, chunk: Sequence[FrameWork], prepared: PreparedChain, reuse: ReuseCache,
               overwrite: bool = False) -> list[np.ndarray]:
        """Each frame with its stages applied, frames in order: each face stage runs over the whole chunk (its
        crops batched together) before the next stage, a frame stage over each frame. A frame is copied once, at
        its first change, and every face pasted into that copy; with `overwrite` (frames the caller owns and no
        longer needs) not even once."""
        frames = [work.rgb for work in chunk]
        owned = [overwrite] * len(frames)
        seen = _Seen()
        steps = {step.stage: (index, step) for index, step in enumerate(prepared)}
        for stage, processor in self.stages:
            if stage in self._off:
                continue
            if stage not in steps:
                frame_processor: FrameProcessor = processor  # type: ignore[assignment]
                frames = [frame_processor.process_frame(frame, work.time)
                          for frame, work in zip(frames, chunk, strict=True)]
                owned = [True] * len(frames)
                continue
            index, step = steps[stage]
            self._render_faces(chunk, frames, owned, index, step, reuse, seen)
            self.residency.after_stage(step.processor.generator_models)
        if self.debugger is None or DEBUGGER in self._off:
            return frames
        for number, work in enumerate(chunk):
            if work.targets:
                frame = frames[number] if owned[number] else frames[number].copy()
                frames[number] = self.debugger.draw(frame, seen.marks(number, work.targets),
                                                    frame.shape[0] / work.rgb.shape[0])
        return frames

    @staticmethod
    def _render_faces(chunk: Sequence[FrameWork], frames: list[np.ndarray], owned: list[bool], index: int,
                      step: Prepared[Any], reuse: ReuseCache, seen: _Seen) -> None:
        """One face stage over every face of the chunk, pasted into `frames` (copied once where not `owned`)."""
        processor = step.processor
        reads_original = isinstance(processor, ReadsOriginal) and processor.reads_original
        timed = isinstance(processor, ChangesOverTime) and processor.changes_over_time
        placed: list[tuple[int, Target, FaceCrop, Slot]] = []
        fresh: list[tuple[FaceCrop, Slot]] = []
        for number, work in enumerate(chunk):
            for target in work.targets:
                crop = replace(processor.crop(frames[number], target.face), time=work.time)
                if reads_original:
                    crop = replace(crop, original=processor.crop(work.rgb, target.face).image)
                claim = reuse.claim((target.track_id, index), crop, reusable=not timed)
                placed.append((number, target, crop, claim.slot))
                if claim.fresh:
                    fresh.append((crop, claim.slot))
                    seen.generated.add((number, target.track_id))
        if fresh:
            for (_, slot), result in zip(fresh, step.process([crop for crop, _ in fresh]), strict=True):
                slot.result = result
        for number, target, crop, slot in placed:
            result = slot.fitted(crop.image.shape[:2])
            frames[number] = paste_back(frames[number], result.image, result.alpha, crop.crop_from_frame,
                                        in_place=owned[number])
            owned[number] = True
            seen.masks.setdefault((number, target.track_id), (result.alpha, crop.crop_from_frame))


class _Seen:
    """What the face stages did to each face of a chunk, keyed by (frame number, track id), for the debugger: whether
    any stage generated its result (rather than reusing one), and the mask the first stage pasted it with."""

    def __init__(self) -> None:
        self.generated: set[tuple[int, int]] = set()
        self.masks: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def marks(self, number: int, targets: Sequence[Target]) -> list[FaceMark]:
        return [FaceMark(target.track_id, target.face, reused=(number, target.track_id) not in self.generated
                         and (number, target.track_id) in self.masks, mask=self.masks.get((number, target.track_id)))
                for target in targets]


def _masker(masks: MaskOptions, pool: ModelPool, topology: MeshTopology) -> FaceMasker:
    try:
        return FaceMasker(pool, masks, topology.face_oval)
    except ValueError as exc:
        raise UsageError(detail=f"face masks: {exc}") from exc

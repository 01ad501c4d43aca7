"""The processor chain: the face processors (swapper, then enhancer), the frame enhancer and the face debugger a run
applies to each frame, described before anything is loaded (`ChainSpec`: what the memory plan reads) and built on the run's pool
(`Chain`: what the frame loop calls).

A face processor cuts each selected face out of the frame, processes the crops of a batch of frames at once and
pastes each result back through the inverse of its crop transform; the frame enhancer then sees the whole frame,
and the face debugger draws last what the face processors were given and did.
What live controls change while frames go through is asked of the processors' capabilities (KeepsMouth,
SizedFaces), never of their classes.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Literal

import numpy as np

from slimfuse.config import EnhanceOptions, MaskOptions, RunConfig, SwapOptions
from slimfuse.errors import UsageError
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.faces.track import Track
from slimfuse.faces.types import Face
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.frame_enhancers import SCALES
from slimfuse.models.pool import ModelPool
from slimfuse.pipeline.residency import Residency
from slimfuse.pipeline.reuse import ReuseCache, Slot
from slimfuse.processors.base import FaceCrop, FaceProcessor, KeepsMouth, Processed, SizedFaces, SourcePhoto, State
from slimfuse.processors.blend import paste_back
from slimfuse.processors.debug import FaceDebugger, FaceMark
from slimfuse.processors.enhance import EnhanceProcessor
from slimfuse.processors.frame_enhance import FrameEnhanceOptions, FrameEnhancer
from slimfuse.processors.mesh_processor import MeshSwapProcessor
from slimfuse.processors.onnx_swap import OnnxSwapProcessor
from slimfuse.processors.paste_masks import FaceMasker

TOPOLOGY = "face_mesh_topology"
Stage = Literal["swapper", "face_enhancer", "frame_enhancer", "face_debugger"]
"""A stage's place in the chain: what switches it off and on while frames go through (live mode)."""


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
    """Which processors a run applies, from its options: nothing is loaded to know it."""

    swap: SwapOptions
    enhance: EnhanceOptions
    masks: MaskOptions

    @classmethod
    def of(cls, config: RunConfig) -> ChainSpec:
        return cls(config.swap, config.enhance, config.masks)

    @property
    def swapper(self) -> str | None:
        """A neural swapper's catalog name; None: the embedded mesh swapper."""
        return self.swap.face_swapper_model if self.swap.neural else None

    def models(self, catalog: Catalog) -> tuple[str, ...]:
        """Every catalog model the chain's processors load, each once, in the order they are used."""
        names: list[str] = []
        for model in (self.swapper, self.enhance.face_enhancer):
            if model is not None:
                io = catalog.get(model).io
                names += [model, *(io.companions if io is not None else ())]
        if self.swapper is not None or self.enhance.face_enhancer is not None:
            names += FaceMasker.models_for(self.masks)
        if self.enhance.frame_enhancer is not None:
            names.append(self.enhance.frame_enhancer)
        return tuple(dict.fromkeys(names))

    def build(self, pool: ModelPool, batcher: AdaptiveBatcher, face_size: int, pixel_boost: int | None,
              frame_tile: int, residency: Residency) -> Chain:
        """The processors on the run's pool; face_size, pixel_boost and frame_tile as the run's plan capped them."""
        topology = MeshTopology.from_json(pool.store.path(TOPOLOGY).read_text(encoding="utf-8"))
        masker = _masker(self.masks, pool, topology)
        stages: list[tuple[Stage, FaceProcessor[Any]]] = []
        try:
            if self.swapper is None:
                stages.append(("swapper", MeshSwapProcessor(topology, self.swap, face_size)))
            else:
                stages.append(("swapper", OnnxSwapProcessor(pool, self.swap, pixel_boost, masker, batcher)))
        except ValueError as exc:
            raise UsageError(detail=f"--face-swapper-model {self.swap.face_swapper_model}: {exc}") from exc
        if self.enhance.face_enhancer is not None:
            try:
                stages.append(("face_enhancer", EnhanceProcessor(pool, self.enhance, masker.for_enhancer(), batcher)))
            except ValueError as exc:
                raise UsageError(detail=f"--face-enhancer-model {self.enhance.face_enhancer}: {exc}") from exc
        frame = None if self.enhance.frame_enhancer is None else _frame_enhancer(self.enhance, pool, frame_tile)
        debugger = FaceDebugger(self.swap.face_debugger_items) if self.swap.debugger else None
        return Chain(pool, stages, frame, residency, debugger)


class Chain:
    """The built stages of a run. `prepare` once a run (and once for each other person live mode switches to);
    `render` for each batch of frames. A stage switched off (`switch`) passes its frames through untouched until
    it is switched on again."""

    def __init__(self, pool: ModelPool, stages: Sequence[tuple[Stage, FaceProcessor[Any]]],
                 frame_enhancer: FrameEnhancer | None, residency: Residency, debugger: FaceDebugger | None = None) -> None:
        self.pool = pool
        self.stages = tuple(stages)
        self.frame_enhancer = frame_enhancer
        self.debugger = debugger
        self.residency = residency
        self._off: set[Stage] = set()

    @property
    def processors(self) -> tuple[FaceProcessor[Any], ...]:
        return tuple(processor for _, processor in self.stages)

    @property
    def preparation_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for processor in self.processors for name in processor.preparation_models))

    @property
    def frame_scale(self) -> int:
        """How much larger the chain's frames come out than they went in (the frame enhancer's kept scale)."""
        return 1 if self.frame_enhancer is None else self.frame_enhancer.frame_scale

    def resize_faces(self, face_size: int) -> None:
        """Process faces at most at `face_size` from the next frame on (the mesh swapper's target face size; the
        neural processors keep their model's size)."""
        for processor in self.processors:
            if isinstance(processor, SizedFaces):
                processor.resize(face_size)

    def has(self, stage: Stage) -> bool:
        extra = {"frame_enhancer": self.frame_enhancer, "face_debugger": self.debugger}.get(stage)
        return any(name == stage for name, _ in self.stages) or extra is not None

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
        """Each face processor with its state from the source photos (a texture, an embedding); every model is
        loaded and checked here, before any frame is worked on."""
        prepared = []
        for stage, processor in self.stages:
            prepared.append(Prepared(stage, processor, processor.prepare(photos)))
            self.residency.after_stage(processor.generator_models)
        if self.frame_enhancer is not None:
            self.frame_enhancer.session()
        return tuple(prepared)

    def render(self, chunk: Sequence[tuple[np.ndarray, Sequence[Target]]], prepared: PreparedChain,
               reuse: ReuseCache, overwrite: bool = False) -> list[np.ndarray]:
        """Each frame with its targets processed, frames in order: each face processor runs over the whole chunk
        (its crops batched together) before the next, then the frame enhancer over each frame. A frame is copied
        once, at its first face, and every face pasted into that copy; with `overwrite` (frames the caller owns and
        no longer needs) not even once."""
        frames = [rgb for rgb, _ in chunk]
        owned = [overwrite] * len(frames)
        seen = _Seen()
        for index, step in enumerate(prepared):
            if step.stage in self._off:
                continue
            placed: list[tuple[int, Target, FaceCrop, Slot]] = []
            fresh: list[tuple[FaceCrop, Slot]] = []
            for number, (_, targets) in enumerate(chunk):
                for target in targets:
                    crop = step.processor.crop(frames[number], target.face)
                    claim = reuse.claim((target.track_id, index), crop)
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
            self.residency.after_stage(step.processor.generator_models)
        if self.frame_enhancer is not None and "frame_enhancer" not in self._off:
            frames = [self.frame_enhancer.enhance(frame) for frame in frames]
            owned = [True] * len(frames)
        if self.debugger is None or "face_debugger" in self._off:
            return frames
        for number, (rgb, targets) in enumerate(chunk):
            if targets:
                frame = frames[number] if owned[number] else frames[number].copy()
                frames[number] = self.debugger.draw(frame, seen.marks(number, targets), frame.shape[0] / rgb.shape[0])
        return frames


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


def _frame_enhancer(options: EnhanceOptions, pool: ModelPool, tile: int) -> FrameEnhancer:
    model = options.frame_enhancer_model
    try:
        tiling = FrameEnhanceOptions.of(options, tile)
    except ValueError as exc:
        raise UsageError(detail=f"--frame-enhancer-tile-size / --frame-enhancer-tile-overlap: {exc}") from exc
    return FrameEnhancer(partial(pool.session, model), SCALES[model], tiling)

"""Swapping faces frame after frame: tracking, selection that holds still, reuse, and per-frame statistics.

This is the part of the video pipeline that sees pixels; reading and writing streams live in pipeline/video.py.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from slimfuse.config import RunConfig
from slimfuse.faces.track import FaceTracker, Track, TrackerOptions
from slimfuse.faces.types import Face
from slimfuse.pipeline.image import ImageSwapper
from slimfuse.pipeline.reuse import ReuseCache, ReuseOptions, Slot
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.blend import paste_back

# In `one` mode another face must be this much larger before the swap moves to it, so it does not flicker
# between two faces of about the same size.
SWITCH_MARGIN = 1.2


@dataclass(frozen=True)
class Target:
    """A face to swap in one frame, and the track it belongs to."""

    track_id: int
    face: Face


@dataclass(frozen=True)
class FrameStats:
    frames: int
    frames_with_faces: int
    detections_run: int
    identities_computed: int
    generated: int
    reused: int


class FrameSwapper:
    """Owns the per-run state of a video swap: tracks, the chosen face, the reuse cache."""

    def __init__(self, swapper: ImageSwapper, config: RunConfig, reuse: ReuseOptions) -> None:
        self.swapper = swapper
        self.config = config
        self.tracker = FaceTracker(swapper.analyser, swapper.identity, TrackerOptions(detect_interval=config.detect_interval))
        self.reuse = ReuseCache(reuse)
        self.prepared = swapper.prepare_sources(keep_identity=True)  # the tracker settles crossing faces by identity
        self._reference: np.ndarray | None = None
        self._chosen: int | None = None
        self._frames = 0
        self._with_faces = 0

    def process(self, rgb: np.ndarray, time: float) -> np.ndarray:
        """The frame with its selected faces swapped (and the frame enhancer applied, when one is chosen);
        without faces or frame enhancer, the frame comes back untouched."""
        return self.render(rgb, self.analyse(rgb, time))

    def analyse(self, rgb: np.ndarray, time: float) -> list[Target]:
        """Track the frame's faces and pick the ones to swap. The targets are immutable snapshots, so the
        next frame can be analysed while this one renders."""
        self._frames += 1
        tracks = self.tracker.update(rgb, time)
        self.reuse.forget({track.id for track in self.tracker.tracks})  # ended tracks free their cache
        targets = [Target(track.id, track.face) for track in self._select(rgb, tracks)]
        self._with_faces += bool(targets)
        return targets

    def render(self, rgb: np.ndarray, targets: list[Target]) -> np.ndarray:
        """Swap `targets` into the frame. Safe to call from several threads for different frames when reuse is
        off (with reuse on, call it in frame order)."""
        return self.render_many([(rgb, targets)])[0]

    def render_many(self, chunk: Sequence[tuple[np.ndarray, list[Target]]]) -> list[np.ndarray]:
        """Swap each frame's targets into it, frames in order: each processor runs over the whole chunk (its
        crops batched together) before the next, and at a memory level that keeps one generator resident at a
        time its models are released after it."""
        frames = [rgb for rgb, _ in chunk]
        for index, (processor, state) in enumerate(zip(self.swapper.processors, self.prepared, strict=True)):
            placed: list[tuple[int, FaceCrop, Slot]] = []
            fresh: list[tuple[FaceCrop, Slot]] = []
            for number, (_, targets) in enumerate(chunk):
                for target in targets:
                    crop = processor.crop(frames[number], target.face)
                    claim = self.reuse.claim((target.track_id, index), crop)
                    placed.append((number, crop, claim.slot))
                    if claim.fresh:
                        fresh.append((crop, claim.slot))
            if fresh:
                results = processor.process([crop for crop, _ in fresh], state)
                for (_, slot), result in zip(fresh, results, strict=True):
                    slot.result = result
            for number, crop, slot in placed:
                result = slot.fitted(crop.image.shape[:2])
                frames[number] = paste_back(frames[number], result.image, result.alpha, crop.crop_from_frame)
            self.swapper.stage_done(processor)
        return [self.swapper.finish_frame(frame) for frame in frames]

    def stats(self) -> FrameStats:
        return FrameStats(frames=self._frames, frames_with_faces=self._with_faces,
                          detections_run=self.tracker.detections_run,
                          identities_computed=self.tracker.identities_computed,
                          generated=self.reuse.generated, reused=self.reuse.reused)

    def _select(self, rgb: np.ndarray, tracks: list[Track]) -> list[Track]:
        mode = self.config.face_selector_mode
        if not tracks:
            return []
        if mode == "many":
            return tracks
        if mode == "one":
            return [self._hold_choice(tracks)]
        reference = self._reference_descriptor(rgb, tracks)
        return [track for track in tracks
                if self.swapper.identity.distance(self.tracker.descriptor(rgb, track), reference)
                <= self.config.reference_face_distance]

    def _hold_choice(self, tracks: list[Track]) -> Track:
        largest = tracks[0]
        current = next((track for track in tracks if track.id == self._chosen), None)
        if current is None or largest.face.size > SWITCH_MARGIN * current.face.size:
            current = largest
        self._chosen = current.id
        return current

    def _reference_descriptor(self, rgb: np.ndarray, tracks: list[Track]) -> np.ndarray:
        """From --reference-face-image, or else the face at --reference-face-position in the first frame with faces."""
        if self._reference is None:
            if self.config.reference_face_image is not None:  # the target's own faces are not used then
                self._reference = self.swapper.reference_descriptor(rgb, [])
            else:
                position = min(self.config.reference_face_position, len(tracks) - 1)
                self._reference = self.tracker.descriptor(rgb, tracks[position])
        return self._reference


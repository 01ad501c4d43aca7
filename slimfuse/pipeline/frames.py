"""The per-frame loop every target goes through: an image is a one-frame stream, a video or a live feed a longer
one. Analysis tracks the frame's faces and selects the ones to swap; rendering runs the processor chain over them,
reusing a generated face while its crop has barely changed.

This is the part of the pipeline that sees pixels; reading and writing files and streams live beside it
(pipeline/image.py, pipeline/video.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from slimfuse.faces.recognize import Recognizer
from slimfuse.faces.select import FaceSelector
from slimfuse.faces.track import FaceTracker, TrackerModels, TrackerOptions
from slimfuse.pipeline.chain import Chain, FrameWork, PreparedChain, Target
from slimfuse.pipeline.reuse import ReuseCache, ReuseOptions


@dataclass(frozen=True)
class FrameStats:
    frames: int
    frames_with_faces: int
    faces_found: int
    faces_swapped: int
    detections_run: int
    identities_computed: int
    generated: int
    reused: int


class FrameLoop:
    """The state of one stream of frames: tracks, the chosen faces, the reuse cache. Make one per target."""

    def __init__(self, chain: Chain, prepared: PreparedChain, models: TrackerModels, recognizer: Recognizer,
                 selector: FaceSelector, tracking: TrackerOptions, reuse: ReuseOptions) -> None:
        self.chain = chain
        self.prepared = prepared
        self.tracker = FaceTracker(models, recognizer, tracking)
        self.selector = selector
        self.reuse = ReuseCache(reuse)
        self._frames = 0
        self._with_faces = 0
        self._found = 0
        self._swapped = 0

    def process(self, rgb: np.ndarray, time: float) -> np.ndarray:
        """The frame with its selected faces swapped (and the frame enhancer applied, when one is chosen);
        without faces or frame enhancer, the frame comes back untouched."""
        return self.render(rgb, self.analyse(rgb, time), time=time)

    def analyse(self, rgb: np.ndarray, time: float) -> list[Target]:
        """Track the frame's faces and pick the ones to swap. The targets are immutable snapshots, so the
        next frame can be analysed while this one renders."""
        self._frames += 1
        if not self.chain.works_on_faces:
            return []  # a chain of frame stages alone: no face is looked for
        tracks = self.tracker.update(rgb, time)
        self.reuse.forget({track.id for track in self.tracker.tracks})  # ended tracks free their cache
        chosen = self.selector.select(tracks, lambda track: self.tracker.descriptor(rgb, track),
                                      lambda track: self.tracker.classes(rgb, track))
        targets = [Target.of(track) for track in chosen]
        self._with_faces += bool(targets)
        self._found += len(tracks)
        self._swapped += len(targets)
        return targets

    def render(self, rgb: np.ndarray, targets: list[Target], overwrite: bool = False, time: float = 0.0) -> np.ndarray:
        """Swap `targets` into the frame at `time` seconds (with `overwrite`, into `rgb` itself: a frame the caller
        owns and no longer needs). Safe to call from several threads for different frames when reuse is off (with
        reuse on, call it in frame order)."""
        return self.render_many([FrameWork(rgb, targets, time)], overwrite)[0]

    def render_many(self, chunk: Sequence[FrameWork], overwrite: bool = False) -> list[np.ndarray]:
        """Swap each frame's targets into it, frames in order, each processor over the whole chunk at once."""
        return self.chain.render(chunk, self.prepared, self.reuse, overwrite)

    def use_sources(self, prepared: PreparedChain) -> None:
        """Swap another person in from the next frame on (the processors' state from Run.prepare_sources); no face
        generated from the last one is reused."""
        self.prepared = prepared
        self.reuse.clear()

    def forget_generated(self) -> None:
        """The chain now makes other faces (a processor switched on or off, other swap options): no face generated
        before is reused."""
        self.reuse.clear()

    def tune(self, face_size: int, detect_interval: int) -> None:
        """Change the processing size and the detection interval while frames go through (the live latency
        ladder); the next frame uses them."""
        self.chain.resize_faces(face_size)
        self.tracker.options = replace(self.tracker.options, detect_interval=detect_interval)

    def stats(self) -> FrameStats:
        return FrameStats(frames=self._frames, frames_with_faces=self._with_faces, faces_found=self._found,
                          faces_swapped=self._swapped,
                          detections_run=self.tracker.detections_run,
                          identities_computed=self.tracker.identities_computed,
                          generated=self.reuse.generated, reused=self.reuse.reused)

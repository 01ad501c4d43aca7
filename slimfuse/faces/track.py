"""Faces followed through a video: who is who from frame to frame, with steady landmarks.

The detector runs every `detect_interval` frames, or sooner when a face is lost or two faces overlap; in
between, each face's mesh is found from the crop its mesh had in the previous frame, as MediaPipe's own video
mode does. Detections are matched to tracks by box overlap; where that is ambiguous (faces crossing), by identity,
which is computed once per track rather than once per frame.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from slimfuse.config import FaceOptions
from slimfuse.faces.classify import FaceClasses, FaceClassifier
from slimfuse.faces.geometry import iou
from slimfuse.faces.landmarks import FaceMesh
from slimfuse.faces.recognize import Recognizer
from slimfuse.faces.smooth import OneEuroFilter, OneEuroSettings
from slimfuse.faces.types import Face


class Detector(Protocol):
    def detect(self, image: np.ndarray, scan_tiles: bool = True) -> list[Face]: ...


class TrackerModels(Protocol):
    """Where the tracker gets its models for each frame: from the run's pool, so a model the pool evicts under a
    memory budget is not kept alive here behind its back."""

    def detector(self) -> Detector: ...

    def mesh(self) -> FaceMesh: ...

    def classifier(self) -> FaceClassifier: ...


@dataclass(frozen=True)
class TrackerOptions:
    detect_interval: int = FaceOptions.face_detector_interval
    """Run the detector every this many frames (1 = every frame; the run's --face-detector-interval)."""
    match_iou: float = 0.3
    """The box overlap a detection needs to continue a track (the run's --face-tracker-score, where given)."""
    crossing_iou: float = 0.2
    """Two tracks overlapping more than this are checked by identity at the next detection."""
    max_missed: int = 2
    """Detections a track may miss before it ends."""
    tile_scan_every: int = 4
    """While faces are being followed, search the tiles of large frames for new small faces only every this many
    detections (the whole frame is searched at every one); with no face followed, every detection scans them."""
    smoothing: OneEuroSettings | None = OneEuroSettings()


@dataclass
class Track:
    id: int
    face: Face
    """The latest face, landmarks smoothed: the next frame's mesh crop follows it (a steady crop keeps the model's
    landmarks steady; following the raw points lets their noise walk the crop)."""
    raw: Face
    """The latest face as the models gave it (what identity is computed from)."""
    filter: OneEuroFilter | None
    descriptor: np.ndarray | None = None
    classes: FaceClasses | None = None
    missed: int = 0


class FaceTracker:
    def __init__(self, models: TrackerModels, recognizer: Recognizer, options: TrackerOptions = TrackerOptions()) -> None:
        self.models = models
        self.recognizer = recognizer
        self.options = options
        self.tracks: list[Track] = []
        self._next_id = 0
        self._frames = 0
        self._force_detection = True
        self.detections_run = 0
        self.identities_computed = 0

    def update(self, frame: np.ndarray, time: float) -> list[Track]:
        """The tracks visible in this frame, largest face first."""
        # With no face being followed, only the detector can find one: run it on every frame until it does.
        detect = self._force_detection or not self.tracks or self._frames % self.options.detect_interval == 0
        self._frames += 1
        self._force_detection = False
        if detect:
            visible = self._update_with_detections(frame)
        else:
            visible = self._follow(frame)
            if self._force_detection:  # a face was lost (a cut, a jump): look for it in this frame, so it is not
                self._force_detection = False  # passed through unswapped until the next one
                visible = self._update_with_detections(frame)
        for track in visible:
            track.face = self._smoothed(track, time)
        if self._any_crossing(visible):
            self._force_detection = True
        return sorted(visible, key=lambda track: -track.face.size)

    def descriptor(self, frame: np.ndarray, track: Track) -> np.ndarray:
        """The track's identity, computed on first need only."""
        if track.descriptor is None:
            track.descriptor = self.recognizer.descriptor(frame, track.raw)
            self.identities_computed += 1
        return track.descriptor

    def classes(self, frame: np.ndarray, track: Track) -> FaceClasses:
        """What the classifier tells of the track's face, computed on first need only."""
        if track.classes is None:
            track.classes = self.models.classifier().classify(frame, track.raw)
        return track.classes

    def _follow(self, frame: np.ndarray) -> list[Track]:
        visible = []
        mesh = self.models.mesh()
        for track in self.tracks:
            followed = mesh.follow(frame, track.face)
            if followed is None:
                self._force_detection = True  # lost: `update` looks again with the detector
                continue
            track.raw = followed
            visible.append(track)
        return visible

    def _update_with_detections(self, frame: np.ndarray) -> list[Track]:
        scan_tiles = not self.tracks or self.detections_run % self.options.tile_scan_every == 0
        self.detections_run += 1
        detections = self.models.detector().detect(frame, scan_tiles)
        mesh = self.models.mesh()
        pairs = self._match(frame, detections)
        visible: list[Track] = []
        matched_tracks = set()
        for track, detection in pairs:
            followed = mesh.follow(frame, track.face)
            if followed is None or float(iou(followed.box, detection.box[None])[0]) < self.options.match_iou:
                followed = mesh.landmarks(frame, detection)  # drifted: start again from the detection
            if followed is None:
                continue
            track.raw, track.missed = followed, 0
            matched_tracks.add(track.id)
            visible.append(track)
        matched_detections = {id(detection) for _, detection in pairs}
        for detection in detections:
            if id(detection) in matched_detections:
                continue
            face = mesh.landmarks(frame, detection)
            if face is not None:
                visible.append(self._new_track(face))
        survivors = []
        for track in self.tracks:
            if track.id not in matched_tracks:
                track.missed += 1
                if track.missed <= self.options.max_missed:
                    survivors.append(track)
        self.tracks = visible + survivors
        return visible

    def _match(self, frame: np.ndarray, detections: list[Face]) -> list[tuple[Track, Face]]:
        """Greedy matching by box overlap; tracks that overlap each other are settled by identity."""
        if not self.tracks or not detections:
            return []
        boxes = np.array([d.box for d in detections])
        overlaps = np.array([iou(track.raw.box, boxes) for track in self.tracks])
        pairs: list[tuple[Track, Face]] = []
        used_tracks: set[int] = set()
        used_detections: set[int] = set()
        for flat in np.argsort(-overlaps, axis=None):
            t, d = np.unravel_index(flat, overlaps.shape)
            if overlaps[t, d] < self.options.match_iou or t in used_tracks or d in used_detections:
                continue
            used_tracks.add(int(t))
            used_detections.add(int(d))
            pairs.append((self.tracks[t], detections[d]))
        return self._settle_by_identity(frame, pairs, overlaps)

    def _settle_by_identity(self, frame: np.ndarray, pairs: list[tuple[Track, Face]],
                            overlaps: np.ndarray) -> list[tuple[Track, Face]]:
        """Where a detection overlaps two tracks, give each track the detection that looks like it."""
        ambiguous = [i for i, (track, _) in enumerate(pairs)
                     if (overlaps[self.tracks.index(track)] >= self.options.match_iou).sum() > 1]
        if len(ambiguous) < 2:
            return pairs
        tracks = [pairs[i][0] for i in ambiguous]
        faces = [pairs[i][1] for i in ambiguous]
        probes = []
        for face in faces:
            located = self.models.mesh().landmarks(frame, face)
            probes.append(self.recognizer.descriptor(frame, located or face))
            self.identities_computed += 1
        settled = list(pairs)
        free = list(range(len(faces)))
        for slot, track in zip(ambiguous, tracks, strict=True):
            reference = self.descriptor(frame, track)
            best = min(free, key=lambda k: self.recognizer.distance(probes[k], reference))
            free.remove(best)
            settled[slot] = (track, faces[best])
            if faces[best] is not pairs[slot][1]:
                # The identity moved: restart the mesh crop from the detection, not from the other person.
                track.raw = track.face = faces[best]
                if track.filter is not None:
                    track.filter.reset()
        return settled

    def _new_track(self, face: Face) -> Track:
        smoothing = self.options.smoothing
        track = Track(id=self._next_id, face=face, raw=face,
                      filter=OneEuroFilter(smoothing) if smoothing is not None else None)
        self._next_id += 1
        return track

    def _smoothed(self, track: Track, time: float) -> Face:
        if track.filter is None or track.raw.landmarks is None:
            return track.raw
        landmarks = track.filter(track.raw.landmarks, time, scale=track.raw.size)
        return replace(track.raw, landmarks=landmarks)

    def _any_crossing(self, visible: list[Track]) -> bool:
        for index, track in enumerate(visible[:-1]):
            others = np.array([other.face.box for other in visible[index + 1:]])
            if float(iou(track.face.box, others).max()) > self.options.crossing_iou:
                return True
        return False

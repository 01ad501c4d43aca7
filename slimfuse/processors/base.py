"""The processor contracts: a face processor (swapper, enhancer, ...) works on face crops in batches, a frame
processor (frame enhancer, ...) on whole frames.

The pipeline asks a processor to cut each face out of the frame (`crop`, each processor its own alignment and
size), hands it the crops of a frame as one batch (`process`), and pastes each result back through the
inverse of `crop_from_frame` with the returned alpha. A processor reads no files and parses no options; models
come from the run's ModelPool.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

import cv2
import numpy as np

from slimfuse.faces.align import align_matrix, five_points, landmarks_in_crop, warp_to_crop
from slimfuse.faces.geometry import apply_affine, rotated_square
from slimfuse.faces.types import Face

# A face crop holds this much context around the mesh's extent, for the mask's feathered edge.
CROP_CONTEXT = 1.6


@dataclass(frozen=True)
class FaceCrop:
    """A face cut out of a frame: the pixels, the mesh in crop pixels, and the frame-to-crop affine."""

    image: np.ndarray
    landmarks: np.ndarray
    crop_from_frame: np.ndarray
    original: np.ndarray | None = None
    """The same crop cut from the frame as it came into the chain, before any stage changed it (given to a
    `ReadsOriginal` processor only)."""
    time: float = 0.0
    """The frame's time in seconds from the start of the target (its own timestamp); 0 for an image."""


@dataclass(frozen=True)
class SourcePhoto:
    """One source photo and its (largest) face."""

    image: np.ndarray
    face: Face


@dataclass(frozen=True)
class Processed:
    """A processed crop (same shape as the input crop) and where it differs from it (alpha in [0, 1])."""

    image: np.ndarray
    alpha: np.ndarray


State = TypeVar("State")
"""What a processor prepares from the source photos and takes back for every batch (a texture, an embedding)."""


class FaceProcessor(Protocol[State]):
    @property
    def preparation_models(self) -> tuple[str, ...]:
        """Catalog models only `prepare` uses: the run can release them once the sources are prepared."""
        ...

    @property
    def generator_models(self) -> tuple[str, ...]:
        """The large models `process` runs: a strict memory level releases them after each stage."""
        ...

    def prepare(self, sources: Sequence[SourcePhoto]) -> State:
        """What the processor needs from the source photos (a texture, an embedding), computed once a run."""
        ...

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop: ...

    def process(self, crops: Sequence[FaceCrop], prepared: State) -> list[Processed]: ...


@runtime_checkable
class ReadsOriginal(Protocol):
    """A face processor that also reads each face as it was before the chain changed it (`FaceCrop.original`)."""

    reads_original: bool


@runtime_checkable
class ChangesOverTime(Protocol):
    """A face processor whose result depends on the frame's time as well as its crop (`FaceCrop.time`, e.g. the
    audio under it): its results are never reused from an earlier frame."""

    changes_over_time: bool


class FrameProcessor(Protocol):
    """A stage that works on whole frames (RGB uint8 in, RGB uint8 out; RGBA for a transparent background)."""

    @property
    def models(self) -> tuple[str, ...]:
        """The catalog models it loads."""
        ...

    @property
    def frame_scale(self) -> int:
        """How much larger its frames come out than they went in."""
        ...

    def load(self) -> None:
        """Open and check its models before any frame is worked on."""
        ...

    def process_frame(self, frame: np.ndarray, time: float) -> np.ndarray: ...


@runtime_checkable
class KeepsMouth(Protocol):
    """A processor that keeps the target's mouth interior, or swaps it too, as it is told while frames go through
    (a live control)."""

    def keep_mouth(self, keep: bool) -> None: ...


@runtime_checkable
class SizedFaces(Protocol):
    """A processor that works on faces of at most a size it can change while frames go through (the live latency
    ladder); the neural processors keep their model's size."""

    def resize(self, max_face_size: int) -> None: ...


@runtime_checkable
class EditsFaces(Protocol):
    """A processor whose edits of each face (the face editor's values, name -> -1..1) change while frames go
    through (a live control)."""

    def edit_faces(self, values: Mapping[str, float]) -> None: ...


def upright_crop(frame: np.ndarray, face: Face, max_face_size: int) -> FaceCrop:
    """An upright square crop around the face's mesh, scaled down so the face is at most `max_face_size` px."""
    if face.landmarks is None:
        raise ValueError("the face has no landmarks")
    points = face.landmarks[:, :2]
    low, high = points.min(0), points.max(0)
    extent = float(max(high - low))
    side = CROP_CONTEXT * extent
    scale = min(1.0, max_face_size / max(extent, 1.0))
    size = max(8, int(round(side * scale)))
    matrix = rotated_square((low + high) / 2, side, 0.0, size)
    image = cv2.warpAffine(frame, matrix, (size, size), flags=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR,
                           borderMode=cv2.BORDER_REPLICATE)
    z = face.landmarks[:, 2:] * (size / side)
    landmarks = np.hstack([apply_affine(matrix, points), z]).astype(np.float32)
    return FaceCrop(image=image, landmarks=landmarks, crop_from_frame=matrix)


def aligned_crop(frame: np.ndarray, face: Face, template: str, size: int, spread: float = 1.0) -> FaceCrop:
    """The face aligned by its five points to `template` at size x size (the neural processors' crop); with
    `spread`, the points first spread that many times about the nose (more of the head in the crop)."""
    if face.landmarks is None:
        raise ValueError("the face has no landmarks")
    five = five_points(face.landmarks)
    if spread != 1.0:
        five = (five - five[2]) * spread + five[2]
    matrix = align_matrix(five, template, size)
    return FaceCrop(image=warp_to_crop(frame, matrix, size), landmarks=landmarks_in_crop(face.landmarks, matrix),
                    crop_from_frame=matrix)

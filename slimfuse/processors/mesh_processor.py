"""The mesh swapper as a FaceProcessor: the most frontal source face is the texture for every target face."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import cv2
import numpy as np

from slimfuse.config import SwapOptions
from slimfuse.faces.analyse import frontalness
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.faces.types import Face
from slimfuse.processors.base import CROP_CONTEXT, FaceCrop, Processed, SourcePhoto, upright_crop
from slimfuse.processors.mesh_swap import EyeLandmarker, MeshSwapper, SourceFace


class MeshSwapProcessor:
    def __init__(self, topology: MeshTopology, options: SwapOptions, max_face_size: int,
                 eyes: EyeLandmarker | None = None) -> None:
        self.swapper = MeshSwapper(topology, options, eyes=eyes)
        self.max_face_size = max_face_size
        self.preparation_models: tuple[str, ...] = ()
        self.generator_models: tuple[str, ...] = ()

    def resize(self, max_face_size: int) -> None:
        self.max_face_size = max_face_size

    def keep_mouth(self, keep: bool) -> None:
        """Keep the target's mouth interior (or swap it too) from the next crop on. A new MeshSwapper with the
        option replaced: its tables take a few milliseconds, and a prepared SourceFace stays valid (the source's
        preparation does not depend on the mouth)."""
        swapper = self.swapper
        if keep != swapper.options.keep_mouth:
            self.swapper = MeshSwapper(swapper.topology, replace(swapper.options, keep_mouth=keep), swapper.tuning,
                                       swapper.eyes)

    def prepare(self, sources: Sequence[SourcePhoto]) -> SourceFace:
        # The source photo itself (prepare_source cuts it out on whole pixels and scales it only when the face is
        # larger than the swapper's limit): its texture is resampled once, by the warp onto the target.
        best = max(sources, key=lambda photo: frontalness(photo.face))
        if best.face.landmarks is None:
            raise ValueError("the source face has no landmarks")
        return self.swapper.prepare_source(best.image, best.face.landmarks)

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return exact_crop(frame, face, self.max_face_size)

    def process(self, crops: Sequence[FaceCrop], prepared: SourceFace) -> list[Processed]:
        results = []
        for crop in crops:
            image, alpha = self.swapper.swap_crop(crop.image, crop.landmarks, prepared)
            results.append(Processed(image=image, alpha=alpha))
        return results


def exact_crop(frame: np.ndarray, face: Face, max_face_size: int) -> FaceCrop:
    """The face's crop on whole pixels when the face needs no scaling (a copy: no resampling, and paste_back's
    inverse is exact too); otherwise the scaled `upright_crop`."""
    if face.landmarks is None:
        raise ValueError("the face has no landmarks")
    points = face.landmarks[:, :2]
    low, high = points.min(0), points.max(0)
    extent = float(max(high - low))
    if extent > max_face_size:
        return upright_crop(frame, face, max_face_size)
    size = max(8, int(math.ceil(CROP_CONTEXT * extent)))
    x0, y0 = (int(math.floor(v)) for v in (low + high) / 2 - size / 2)
    matrix = np.array([[1.0, 0.0, -x0], [0.0, 1.0, -y0]], dtype=np.float64)
    image = cv2.warpAffine(frame, matrix, (size, size), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
    landmarks = face.landmarks.astype(np.float32).copy()
    landmarks[:, 0] -= x0
    landmarks[:, 1] -= y0
    return FaceCrop(image=image, landmarks=landmarks, crop_from_frame=matrix)

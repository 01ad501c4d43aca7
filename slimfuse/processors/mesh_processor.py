"""The mesh swapper as a FaceProcessor: the most frontal source face is the texture for every target face."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from slimfuse.faces.analyse import frontalness
from slimfuse.faces.mesh_topology import MeshTopology
from slimfuse.faces.types import Face
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto, upright_crop
from slimfuse.processors.mesh_swap import MeshSwapOptions, MeshSwapper, SourceFace


class MeshSwapProcessor:
    def __init__(self, topology: MeshTopology, options: MeshSwapOptions, max_face_size: int) -> None:
        self.swapper = MeshSwapper(topology, options)
        self.max_face_size = max_face_size
        self.preparation_models: tuple[str, ...] = ()
        self.generator_models: tuple[str, ...] = ()

    def prepare(self, sources: Sequence[SourcePhoto]) -> SourceFace:
        best = max(sources, key=lambda photo: frontalness(photo.face))
        crop = upright_crop(best.image, best.face, self.max_face_size)
        return self.swapper.prepare_source(crop.image, crop.landmarks)

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return upright_crop(frame, face, self.max_face_size)

    def process(self, crops: Sequence[FaceCrop], prepared: object) -> list[Processed]:
        if not isinstance(prepared, SourceFace):
            raise TypeError("the mesh swapper needs the SourceFace its prepare() made")
        results = []
        for crop in crops:
            image, alpha = self.swapper.swap_crop(crop.image, crop.landmarks, prepared)
            results.append(Processed(image=image, alpha=alpha))
        return results

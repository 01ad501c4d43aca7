"""Swap faces in one still image: read, analyse, select, swap each face in a capped-size crop, write."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from slimfuse.config import RunConfig
from slimfuse.errors import NoSourceFaceError, NoTargetFaceError, OutputIsInputError
from slimfuse.faces.analyse import FaceAnalyser, frontalness
from slimfuse.faces.detect import DetectorOptions
from slimfuse.faces.geometry import apply_affine, rotated_square
from slimfuse.faces.identity import SAME_PERSON_DISTANCE, IdentityModel, distance
from slimfuse.faces.mesh_topology import MeshTopology
from slimfuse.faces.select import select_faces
from slimfuse.faces.types import Face
from slimfuse.media.image_io import LoadedImage, check_output_path, compose_output, read_image, write_image_atomic
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Notify
from slimfuse.processors.blend import paste_back
from slimfuse.processors.mesh_swap import MeshSwapOptions, MeshSwapper, SourceFace

TOPOLOGY = "face_mesh_topology"
# The face crop holds this much context around the mesh's extent, for the mask's feathered edge.
CROP_CONTEXT = 1.6


@dataclass(frozen=True)
class FaceCrop:
    image: np.ndarray
    landmarks: np.ndarray
    crop_from_frame: np.ndarray


def crop_face(frame: np.ndarray, face: Face, max_face_size: int) -> FaceCrop:
    """An upright crop around the face, scaled down so the face is at most `max_face_size` pixels."""
    assert face.landmarks is not None
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


class ImageSwapper:
    """Everything a run needs, loaded once; `run` can be called for many targets."""

    def __init__(self, config: RunConfig, pool: ModelPool, notify: Notify) -> None:
        self.config = config
        self.pool = pool
        self.notify = notify
        self.analyser = FaceAnalyser(pool, DetectorOptions(
            model=config.face_detector_model, score=config.face_detector_score, tile_size=config.face_detector_size))
        self.identity = IdentityModel(pool)
        topology = MeshTopology.from_json(pool.store.path(TOPOLOGY).read_text(encoding="utf-8"))
        self.swapper = MeshSwapper(topology, MeshSwapOptions(
            keep_mouth=config.keep_mouth, keep_eyes=config.keep_eyes, blend=config.blend))

    def prepare_source(self) -> SourceFace:
        """The most frontal face among the source photos (all of one person) as the texture to map."""
        found: list[tuple[LoadedImage, Face]] = []
        for path in self.config.sources:
            loaded = read_image(path)
            faces = self.analyser.faces(loaded.rgb)
            if not faces:
                raise NoSourceFaceError(path)
            found.append((loaded, faces[0]))
        if len(found) > 1:
            self._warn_if_mixed_identities(found)
        loaded, face = max(found, key=lambda item: frontalness(item[1]))
        crop = crop_face(loaded.rgb, face, self.config.target_face_size)
        return self.swapper.prepare_source(crop.image, crop.landmarks)

    def _warn_if_mixed_identities(self, found: list[tuple[LoadedImage, Face]]) -> None:
        descriptors = [self.identity.descriptor(loaded.rgb, face) for loaded, face in found]
        combined = self.identity.combined(descriptors)
        for (loaded, _), descriptor in zip(found, descriptors, strict=True):
            if distance(descriptor, combined) > SAME_PERSON_DISTANCE:
                self.notify(f"slimfuse: warning: {loaded.path}: this face looks like a different person "
                            "from the other source photos")

    def select(self, image: np.ndarray, faces: list[Face]) -> list[Face]:
        config = self.config
        if config.face_selector_mode != "reference":
            return select_faces(faces, config.face_selector_mode)
        reference = self._reference_descriptor(image, faces)
        return select_faces(faces, "reference", reference, lambda face: self.identity.descriptor(image, face),
                            config.reference_face_distance)

    def _reference_descriptor(self, image: np.ndarray, faces: list[Face]) -> np.ndarray:
        config = self.config
        if config.reference_face_image is not None:
            reference = read_image(config.reference_face_image).rgb
            candidates = self.analyser.faces(reference)
            origin = config.reference_face_image
        else:
            reference, candidates, origin = image, faces, config.target
        if not candidates:
            raise NoTargetFaceError(origin, "no face found to use as the reference face")
        position = min(config.reference_face_position, len(candidates) - 1)
        return self.identity.descriptor(reference, candidates[position])

    def swap_frame(self, frame: np.ndarray, faces: list[Face], source: SourceFace) -> np.ndarray:
        for face in faces:
            crop = crop_face(frame, face, self.config.target_face_size)
            swapped, alpha = self.swapper.swap_crop(crop.image, crop.landmarks, source)
            frame = paste_back(frame, swapped, alpha, crop.crop_from_frame)
        return frame

    def run(self) -> Path:
        config = self.config
        check_output_path(config.output)
        _refuse_overwriting_inputs(config)
        source = self.prepare_source()
        target = read_image(config.target)
        faces = self.select(target.rgb, self.analyser.faces(target.rgb))
        if not faces:
            raise NoTargetFaceError(config.target)
        result = self.swap_frame(target.rgb.copy(), faces, source)
        write_image_atomic(compose_output(target, result), config.output, target.icc_profile)
        return config.output


def _refuse_overwriting_inputs(config: RunConfig) -> None:
    inputs = [*config.sources, config.target]
    if config.reference_face_image is not None:
        inputs.append(config.reference_face_image)
    output = config.output
    for path in inputs:
        same = output.resolve() == path.resolve()
        if not same and output.exists() and path.exists():
            same = os.path.samefile(output, path)
        if same:
            raise OutputIsInputError(output)


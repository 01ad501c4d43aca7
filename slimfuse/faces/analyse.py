"""Find faces with their meshes: detection, then FaceMesh on each detection.

The one place that builds a run's face detector (`FaceAnalyser.detector`): the embedded BlazeFace models
(short / full / auto) or a neural detector of the catalog (scrfd_2.5g, retinaface_10g, yunet, yolo_face),
sessions from the pool either way.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from slimfuse.faces.blazeface import SPECS, DetectorOptions, FaceDetector
from slimfuse.faces.classify import FaceClassifier
from slimfuse.faces.neural_detect import NeuralDetectorOptions, NeuralFaceDetector, detector_spec
from slimfuse.faces.landmarks import PRESENCE_THRESHOLD, FaceMesh
from slimfuse.faces.search import SearchingDetector
from slimfuse.faces.track import Detector
from slimfuse.faces.types import Face
from slimfuse.models.neural.detectors import DETECTORS
from slimfuse.models.pool import ModelPool

MESH_MODEL = "face_landmark"


class FaceAnalyser:
    def __init__(self, pool: ModelPool, detector: DetectorOptions = DetectorOptions(),
                 presence: float = PRESENCE_THRESHOLD) -> None:
        """presence: the face presence FaceMesh must report (--face-landmarker-score)."""
        self.pool = pool
        self.detector_options = detector
        self.presence = presence

    @staticmethod
    def models_for(detector: str) -> tuple[str, ...]:
        """The catalog models the analysis runs with `detector`: the detector's and FaceMesh."""
        if detector in DETECTORS:
            return (detector, MESH_MODEL)
        return (*(SPECS[key].model for key in FaceDetector.models_for(detector)), MESH_MODEL)

    def detector(self) -> Detector:
        """The run's face detector (`DetectorOptions.model`): BlazeFace, or the named neural detector; searching the
        frame with a margin and at other angles where the options ask for it."""
        options = self.detector_options
        detector: Detector
        if options.model in DETECTORS:
            neural = NeuralDetectorOptions(tile_size=options.tile_size)
            if options.score is not None:
                neural = replace(neural, score=options.score)
            detector = NeuralFaceDetector(self.pool.session(options.model), detector_spec(options.model), neural)
        else:
            sessions = {key: self.pool.session(SPECS[key].model) for key in FaceDetector.models_for(options.model)}
            detector = FaceDetector(sessions, options)
        if options.angles == (0,) and not any(options.margin):
            return detector
        return SearchingDetector(detector, options.angles, options.margin)

    def mesh(self) -> FaceMesh:
        """The landmark model, its session from the pool."""
        return FaceMesh(self.pool.session(MESH_MODEL), presence=self.presence)

    def classifier(self) -> FaceClassifier:
        """FaceFusion's fairface classifier (selection by gender, race and age), its session from the pool."""
        return FaceClassifier(self.pool)

    def faces(self, image: np.ndarray) -> list[Face]:
        """Every face with its 468-point mesh, largest first."""
        detector = self.detector()
        mesh = self.mesh()
        found = (mesh.landmarks(image, face) for face in detector.detect(image))
        return [face for face in found if face is not None]


def frontalness(face: Face) -> float:
    """1 for a face looking straight at the camera, falling towards 0 as it turns (yaw) away."""
    if face.landmarks is None:
        return 0.0
    points = face.landmarks[:, :2]
    # Nose tip against the midpoint of the two cheek edges of the mesh.
    nose, right_cheek, left_cheek = points[1], points[234], points[454]
    width = float(np.linalg.norm(left_cheek - right_cheek))
    offset = float(np.linalg.norm(nose - (left_cheek + right_cheek) / 2))
    return max(0.0, 1.0 - 2.0 * offset / max(width, 1e-6))

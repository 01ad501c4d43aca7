"""slimfuse faces at the parity geometry (tests/parity/geometry.json), so slimfuse aligns the very points FaceFusion
was given."""
from __future__ import annotations

import numpy as np

from parity.reference import geometry
from slimfuse.faces.align import LEFT_EYE_RING, LEFT_MOUTH_CORNER, NOSE_TIP, RIGHT_EYE_RING, RIGHT_MOUTH_CORNER
from slimfuse.faces.landmarks_68 import MESH_TO_68
from slimfuse.faces.types import Face

MESH_POINTS = 468


def mesh_face(person: str, points_68: bool = False) -> Face:
    """`person`'s ("target" or "source") face, its mesh placed so that slimfuse's five alignment points
    (`five_points`: the mean of each eye's ring, the nose tip, the mouth corners) are geometry.json's five; with
    `points_68`, its 68 points (`landmarks_68`) are geometry.json's too, but for the eyes, nose tip and mouth corners
    the five points take."""
    recorded = geometry()[person]
    five = np.asarray(recorded["five"], dtype=np.float64)
    landmarks = np.zeros((MESH_POINTS, 3), dtype=np.float64)
    if points_68:
        landmarks[list(MESH_TO_68), :2] = np.asarray(recorded["landmark_68"], dtype=np.float64)
    landmarks[list(RIGHT_EYE_RING), :2] = five[0]
    landmarks[list(LEFT_EYE_RING), :2] = five[1]
    for index, point in zip((NOSE_TIP, RIGHT_MOUTH_CORNER, LEFT_MOUTH_CORNER), five[2:], strict=True):
        landmarks[index, :2] = point
    keypoints = np.zeros((6, 2), dtype=np.float32)
    keypoints[:3] = five[:3]
    keypoints[3] = five[3:].mean(axis=0)
    return Face(box=np.asarray(recorded["box"], dtype=np.float32), score=1.0, keypoints=keypoints,
                landmarks=landmarks.astype(np.float32))


def mesh_face_68(person: str) -> Face:
    """`person`'s face as `mesh_face`, with geometry.json's 68 points at their FaceMesh vertices too
    (slimfuse.faces.landmarks_68), each eye ring's other vertices placed so the ring's mean stays the eye's point."""
    recorded = geometry()[person]
    face = mesh_face(person)
    landmarks = np.array(face.landmarks, dtype=np.float64)
    landmarks[list(MESH_TO_68), :2] = np.asarray(recorded["landmark_68"], dtype=np.float64)
    for ring, eye in ((RIGHT_EYE_RING, recorded["five"][0]), (LEFT_EYE_RING, recorded["five"][1])):
        shared = [index for index in ring if index in MESH_TO_68]
        others = [index for index in ring if index not in MESH_TO_68]
        rest = len(ring) * np.asarray(eye, dtype=np.float64) - landmarks[shared, :2].sum(axis=0)
        landmarks[others, :2] = rest / len(others)
    return Face(box=face.box, score=face.score, keypoints=face.keypoints, landmarks=landmarks.astype(np.float32))

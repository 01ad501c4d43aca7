"""468-point FaceMesh landmarks from MediaPipe's face_landmark model.

The face is cut out as a square rotated so the eyes are level (1.5 x the face's size), scaled to 192 px and
run through the model; points map back through the inverse of that crop. Two more passes re-centre the crop on
the previous pass's points, which steadies the result the way MediaPipe's own tracking does.
"""
from __future__ import annotations

import math
from dataclasses import replace

import cv2
import numpy as np

from slimfuse.faces.blazeface import Session
from slimfuse.faces.geometry import apply_affine, invert_affine, rotated_square
from slimfuse.faces.types import Face

MESH_SIZE = 192
MESH_INPUT = "input_1"
CROP_SCALE = 1.5
PRESENCE_THRESHOLD = 0.5
# Outer eye corners in the mesh: the subject's right eye (image left) and left eye.
RIGHT_EYE_OUTER, LEFT_EYE_OUTER = 33, 263


class FaceMesh:
    def __init__(self, session: Session, refine_passes: int = 2, presence: float = PRESENCE_THRESHOLD) -> None:
        """presence: the face presence (0-1) the model must report for a face to be kept (--face-landmarker-score)."""
        # Two re-centred passes: a face found by the detector then lies about half a pixel (root mean square) from
        # where following it frame by frame puts it (one pass leaves more than a pixel), within the landmark hold
        # (smooth.py), so a still face's track starts still instead of creeping there.
        self.session = session
        self.refine_passes = refine_passes
        self.presence = presence

    def landmarks(self, image: np.ndarray, face: Face) -> Face | None:
        """The face with its mesh, or None when the model says there is no face in the crop."""
        right_eye, left_eye = face.keypoints[0], face.keypoints[1]
        angle = math.atan2(left_eye[1] - right_eye[1], left_eye[0] - right_eye[0])
        centre = (face.box[:2] + face.box[2:]) / 2
        side = CROP_SCALE * face.size
        points, present = self._run(image, centre, side, angle)
        for _ in range(self.refine_passes):
            centre, side, angle = crop_from_landmarks(points)
            points, present = self._run(image, centre, side, angle)
        if not present:
            return None
        return replace(face, landmarks=points)

    def follow(self, image: np.ndarray, previous: Face) -> Face | None:
        """The face in a new video frame, from the crop its mesh had in the previous frame (no detector);
        None when the face is no longer there, so the caller runs detection again."""
        if previous.landmarks is None:
            return self.landmarks(image, previous)
        points, present = self._run(image, *crop_from_landmarks(previous.landmarks))
        if not present:
            return None
        return Face(box=_box_of(points), score=previous.score, keypoints=_keypoints_of(points), landmarks=points)

    def _run(self, image: np.ndarray, centre: np.ndarray, side: float, angle: float) -> tuple[np.ndarray, bool]:
        matrix = rotated_square(centre, side, angle, MESH_SIZE)
        crop = cv2.warpAffine(image, matrix, (MESH_SIZE, MESH_SIZE), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REPLICATE)
        tensor = (crop.astype(np.float32) / 255.0)[None]
        raw, logit = self.session.run(None, {MESH_INPUT: tensor})
        points = raw.reshape(468, 3).astype(np.float32)
        back = invert_affine(matrix)
        xy = apply_affine(back, points[:, :2])
        z = points[:, 2] * side / MESH_SIZE
        present = 1.0 / (1.0 + math.exp(-float(np.clip(logit.reshape(-1)[0], -100, 100)))) > self.presence
        return np.column_stack([xy, z]).astype(np.float32), present


# Mesh points standing in for the detector's six keypoints: eye centres (from the eye corners), nose tip,
# mouth centre, and the two cheek edges near the ears.
_KEYPOINT_SOURCES: tuple[tuple[int, ...], ...] = ((33, 133), (263, 362), (1,), (13, 14), (234,), (454,))


def _keypoints_of(points: np.ndarray) -> np.ndarray:
    return np.array([points[list(indices), :2].mean(0) for indices in _KEYPOINT_SOURCES], dtype=np.float32)


def _box_of(points: np.ndarray) -> np.ndarray:
    return np.concatenate([points[:, :2].min(0), points[:, :2].max(0)]).astype(np.float32)


def crop_from_landmarks(points: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Centre, side and angle of the mesh crop that frames these landmarks."""
    right, left = points[RIGHT_EYE_OUTER, :2], points[LEFT_EYE_OUTER, :2]
    angle = math.atan2(left[1] - right[1], left[0] - right[0])
    # Measure the extent in the face's own rotated frame so a rolled head does not inflate the box.
    cos, sin = math.cos(angle), math.sin(angle)
    rotation = np.array([[cos, sin], [-sin, cos]])
    local = points[:, :2] @ rotation.T
    low, high = local.min(0), local.max(0)
    centre = ((low + high) / 2) @ rotation
    side = CROP_SCALE * float(max(high - low))
    return centre.astype(np.float32), side, angle

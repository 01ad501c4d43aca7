"""Face identity with dlib's ResNet descriptor (128-d; the same person lies below distance 0.6).

dlib's 5-point predictor expects an upright face, so the face is first cut out upright (rotated by the
mesh's eye line) at about the resolution dlib's own 150-px chips use.
"""
from __future__ import annotations

import math
from typing import Any

import cv2
import dlib
import numpy as np

from slimfuse.faces.geometry import rotated_square
from slimfuse.faces.landmarks import LEFT_EYE_OUTER, RIGHT_EYE_OUTER
from slimfuse.faces.types import Face
from slimfuse.models.pool import ModelPool

SAME_PERSON_DISTANCE = 0.6
PREDICTOR = "dlib_shape_predictor_5"
RECOGNIZER = "dlib_face_recognition_resnet"
# The upright cut-out: twice the face's size around it, the face about 160 px across.
CONTEXT = 2.0
FACE_PIXELS = 160


def distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b))


class IdentityModel:
    def __init__(self, pool: ModelPool) -> None:
        self.pool = pool

    def models(self) -> tuple[Any, Any]:
        predictor = self.pool.get(PREDICTOR, lambda path: dlib.shape_predictor(str(path)))
        recognizer = self.pool.get(RECOGNIZER, lambda path: dlib.face_recognition_model_v1(str(path)))
        return predictor, recognizer

    def descriptor(self, image: np.ndarray, face: Face) -> np.ndarray:
        predictor, recognizer = self.models()
        crop, box = upright_face(image, face)
        rect = dlib.rectangle(*(int(round(v)) for v in box))
        shape = predictor(crop, rect)
        return np.asarray(recognizer.compute_face_descriptor(crop, shape), dtype=np.float32)

    def combined(self, descriptors: list[np.ndarray]) -> np.ndarray:
        """One identity from several photos of one person: the mean descriptor."""
        return np.mean(np.stack(descriptors), axis=0).astype(np.float32)


def upright_face(image: np.ndarray, face: Face) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """An upright cut-out of the face and the face's box inside it."""
    if face.landmarks is not None:
        right, left = face.landmarks[RIGHT_EYE_OUTER, :2], face.landmarks[LEFT_EYE_OUTER, :2]
    else:
        right, left = face.keypoints[0], face.keypoints[1]
    angle = math.atan2(left[1] - right[1], left[0] - right[0])
    centre = (face.box[:2] + face.box[2:]) / 2
    side = CONTEXT * face.size
    size = int(round(CONTEXT * FACE_PIXELS))
    matrix = rotated_square(centre, side, angle, size)
    crop = cv2.warpAffine(image, matrix, (size, size), flags=cv2.INTER_AREA if side > size else cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REPLICATE)
    half = FACE_PIXELS / 2
    return np.ascontiguousarray(crop), (size / 2 - half, size / 2 - half, size / 2 + half, size / 2 + half)

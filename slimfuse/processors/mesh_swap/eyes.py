"""Eyes: each eye's lid line as MediaPipe's iris model sees it, and how open each eye is.

FaceMesh hardly sees closed eyes (its lid rings stay about two thirds open on a shut eye); the iris model, run on a
64-px crop of an eye, does. Its 16 eye-contour points replace the mesh's lid rings of both faces, as MediaPipe's own
refined face mesh does, so the source's lids are warped to the target's lid line. An eye's opening is its contour's
area over its width squared; its iris depth is where the model's iris centre sits between the lids (0 on the upper
lid, 1 on the lower): lids lowered over an eye that looks down hide the iris but its lower rim, and the model puts
its centre at or below the lower lid."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

import cv2
import numpy as np

from slimfuse.faces.blazeface import Session
from slimfuse.faces.geometry import rotated_square

EYE_CROP = 64  # the iris model's input side in pixels
EYE_CROP_SCALE = 2.3  # the crop spans this many eye widths (MediaPipe's eye region)
EYE_CONTOURS: Mapping[str, tuple[int, ...]] = MappingProxyType({
    # The model's contour points in its order: the outer corner, the lower lid, the inner corner, the upper lid from
    # the outer side. The left eye goes in mirrored, so it looks like a right eye.
    "right_eye": (33, 7, 163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173),
    "left_eye": (263, 249, 390, 373, 374, 380, 381, 382, 362, 466, 388, 387, 386, 385, 384, 398),
})
CONTOUR_POINTS = 16
CORNER_DRIFT = 0.25  # a contour whose corners lie farther than this (of the eye's width) from the mesh's is not used
_OUTLINE = (*range(9), *range(15, 8, -1))  # the contour as a polygon: the lower lid, then the upper lid back
_LOWER_LID, _UPPER_LID = slice(1, 8), slice(9, 16)


class EyeContour(NamedTuple):
    """The model's reading of one eye: its 16 contour points (EYE_CONTOURS order) in the image's pixels, and its
    iris depth (see the module)."""

    points: np.ndarray
    iris_depth: float


class LidLines(NamedTuple):
    """A face's landmarks (468, 3) with its lid rings on the model's contours, and each eye's opening and iris depth
    (EYE_CONTOURS order; an eye whose contour was not used reads its ring's opening and an iris depth of 0.5)."""

    landmarks: np.ndarray
    openings: tuple[float, float]
    iris_depths: tuple[float, float]


@dataclass(frozen=True, eq=False)
class EyeLandmarker:
    """MediaPipe's iris model (`iris_landmark`) on the eyes of a face; `session` gives its session for each call (the
    run's pool, which may release it between frames under a memory budget)."""

    session: Callable[[], Session]

    def contour(self, image: np.ndarray, landmarks: np.ndarray, eye: str) -> EyeContour | None:
        """The eye's contour and iris depth in `image` (RGB uint8), from a level crop around the corners of the
        mesh's ring in `landmarks` (468, >= 2); None where the contour strays from those corners (an eye the model
        cannot see: hidden, or seen edge-on)."""
        ring = np.asarray(landmarks, dtype=np.float64)[list(EYE_CONTOURS[eye]), :2]
        mirrored = eye == "left_eye"
        left, right = (ring[8], ring[0]) if mirrored else (ring[0], ring[8])
        width = float(np.linalg.norm(right - left))
        matrix = rotated_square((left + right) / 2, max(EYE_CROP_SCALE * width, 4.0),
                                math.atan2(right[1] - left[1], right[0] - left[0]), EYE_CROP)
        crop = cv2.warpAffine(image, matrix, (EYE_CROP, EYE_CROP), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REPLICATE)
        if mirrored:
            crop = crop[:, ::-1]
        tensor = (np.ascontiguousarray(crop).astype(np.float32) / np.float32(255.0))[None]
        contour_output, iris_output = self.session().run(None, {"input_1": tensor})[:2]
        found = contour_output.reshape(-1, 3)[:CONTOUR_POINTS, :2].astype(np.float64)
        # Read in the level crop, where the lids run across: the iris centre's height between the lids' mean heights.
        upper, lower = float(found[_UPPER_LID, 1].mean()), float(found[_LOWER_LID, 1].mean())
        iris_depth = (float(iris_output.reshape(-1, 3)[0, 1]) - upper) / max(lower - upper, 1e-6)
        if mirrored:
            found[:, 0] = EYE_CROP - found[:, 0]
        back = cv2.invertAffineTransform(matrix)
        found = found @ back[:, :2].T + back[:, 2]
        drift = max(float(np.linalg.norm(found[i] - ring[i])) for i in (0, 8))
        return EyeContour(found, iris_depth) if drift <= CORNER_DRIFT * width else None

    def lid_lines(self, image: np.ndarray, landmarks: np.ndarray) -> LidLines:
        """`landmarks` (468, 3) with each lid ring moved to the model's contour where it is usable (float32), and
        each eye's opening by those rings and iris depth."""
        points = np.array(landmarks, dtype=np.float32)
        depths = []
        for eye, ring in EYE_CONTOURS.items():
            contour = self.contour(image, points, eye)
            if contour is not None:
                points[list(ring), :2] = contour.points
            depths.append(contour.iris_depth if contour is not None else 0.5)
        right, left = (contour_opening(points[list(ring), :2]) for ring in EYE_CONTOURS.values())
        return LidLines(points, (right, left), (depths[0], depths[1]))


def contour_opening(contour: np.ndarray) -> float:
    """How open an eye is by its 16 contour points (EYE_CONTOURS order): the area over the corner distance squared
    (about 0.25 open, under 0.1 shut)."""
    points = np.asarray(contour, dtype=np.float64)[:, :2]
    width = float(np.linalg.norm(points[8] - points[0]))
    outline = points[list(_OUTLINE)]
    x, y = outline[:, 0], outline[:, 1]
    area = 0.5 * abs(float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)))
    return area / max(width * width, 1e-9)

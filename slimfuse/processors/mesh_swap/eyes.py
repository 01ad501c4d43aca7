"""Eyes: each eye's lid line as MediaPipe's iris model sees it, and how open each eye is.

FaceMesh hardly sees closed eyes (its lid rings stay about two thirds open on a shut eye); the iris model, run on a
64-px crop of each eye, does. Its 16 eye-contour points replace the mesh's lid rings, as MediaPipe's own refined
face mesh does, so the source's lids are warped to the target's lid line; an eye's opening is its contour's area
over its width squared."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

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


@dataclass(frozen=True, eq=False)
class EyeLandmarker:
    """MediaPipe's iris model (`iris_landmark`) on each eye of a face."""

    session: Session

    def refined(self, image: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        """`landmarks` (468, 3) in `image`'s pixels (RGB uint8) with both lid rings moved to the iris model's eye
        contour (x and y; z kept), float32. An eye whose contour strays from the mesh's corners (an eye the model
        cannot see: hidden, or seen edge-on) keeps the mesh's ring."""
        points = np.array(landmarks, dtype=np.float32)
        for name, indices in EYE_CONTOURS.items():
            ring = points[list(indices), :2].astype(np.float64)
            contour = self._contour(image, ring, mirrored=name == "left_eye")
            width = float(np.linalg.norm(ring[8] - ring[0]))
            drift = max(float(np.linalg.norm(contour[i] - ring[i])) for i in (0, 8))
            if drift <= CORNER_DRIFT * width:
                points[list(indices), :2] = contour
        return points

    def _contour(self, image: np.ndarray, ring: np.ndarray, mirrored: bool) -> np.ndarray:
        """The eye's 16 contour points in image pixels, from a level crop around the corners of the mesh's `ring`
        (EYE_CONTOURS order)."""
        outer, inner = ring[0], ring[8]
        left, right = (inner, outer) if mirrored else (outer, inner)
        angle = math.atan2(right[1] - left[1], right[0] - left[0])
        side = max(EYE_CROP_SCALE * float(np.linalg.norm(right - left)), 4.0)
        matrix = rotated_square((left + right) / 2, side, angle, EYE_CROP)
        crop = cv2.warpAffine(image, matrix, (EYE_CROP, EYE_CROP), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REPLICATE)
        if mirrored:
            crop = crop[:, ::-1]
        tensor = (np.ascontiguousarray(crop).astype(np.float32) / np.float32(255.0))[None]
        contour = self.session.run(None, {"input_1": tensor})[0].reshape(-1, 3)[:CONTOUR_POINTS, :2].astype(np.float64)
        if mirrored:
            contour[:, 0] = EYE_CROP - contour[:, 0]
        back = cv2.invertAffineTransform(matrix)
        return contour @ back[:, :2].T + back[:, 2]


def eye_opening(landmarks: np.ndarray, name: str) -> float:
    """How open an eye is: its contour's area over its corner distance squared (about 0.25 open, under 0.1 shut)."""
    contour = np.asarray(landmarks, dtype=np.float64)[list(EYE_CONTOURS[name]), :2]
    width = float(np.linalg.norm(contour[8] - contour[0]))
    outline = contour[list(_OUTLINE)]
    x, y = outline[:, 0], outline[:, 1]
    area = 0.5 * abs(float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)))
    return area / max(width * width, 1e-9)

"""Plain data types for faces found in an image."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Face:
    """One face in one image; every coordinate is in that image's pixels.

    box: (4,) float32 x0, y0, x1, y1.
    keypoints: (6, 2) detector keypoints: right eye, left eye, nose tip, mouth, right ear, left ear
        ("right" is the subject's right, which appears on the image's left).
    landmarks: (468, 3) FaceMesh points x, y, z (z in pixels, same scale as x; smaller is nearer the camera),
        or None when the mesh model has not been run.
    """

    box: np.ndarray
    score: float
    keypoints: np.ndarray
    landmarks: np.ndarray | None = None

    @property
    def size(self) -> float:
        """The longer side of the box in pixels."""
        x0, y0, x1, y1 = self.box
        return float(max(x1 - x0, y1 - y0))

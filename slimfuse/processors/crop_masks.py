"""Paste-back masks of aligned face crops: the crop's square, eroded and blurred, and the mesh's face oval.

Following the public swappers' paste-back (insightface's reference code and its forks): the square is eroded by
about 1/10 of the face size and Gaussian-blurred by about 1/20, so the mask is exactly 0 along the crop's border
and the pasted crop never shows its edge. In an aligned crop the face spans about the crop, so the crop size
stands for the face size.
"""
from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from slimfuse.processors.masks import soft_polygons

ERODE_FRACTION = 0.1
BLUR_FRACTION = 0.05


def box_mask(size: int, erode_fraction: float = ERODE_FRACTION, blur_fraction: float = BLUR_FRACTION) -> np.ndarray:
    """(size, size) float32: 1 inside the square eroded by `erode_fraction` of the size, blurred by
    `blur_fraction`; exactly 0 along the border."""
    erode = max(1, int(round(size * erode_fraction)))
    blur = max(1, int(round(size * blur_fraction)))
    blur = min(blur, erode - 1) if erode > 1 else 0
    mask = np.zeros((size, size), dtype=np.float32)
    mask[erode:size - erode, erode:size - erode] = 1.0
    if blur > 0:
        mask = cv2.GaussianBlur(mask, (2 * blur + 1, 2 * blur + 1), sigmaX=blur / 2.0, borderType=cv2.BORDER_CONSTANT)
    return mask


def oval_mask(size: int, landmarks: np.ndarray, oval: Sequence[int], grow_fraction: float = 0.03,
              feather_fraction: float = 0.05) -> np.ndarray:
    """(size, size) float32: the mesh's face oval (crop pixels), grown and feathered by fractions of the size."""
    ring = np.asarray(landmarks, dtype=np.float64)[list(oval), :2]
    return soft_polygons((size, size), [ring], grow_fraction * size, feather_fraction * size)

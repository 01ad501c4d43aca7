"""Small geometric helpers shared by the face stages: boxes, IoU, rotated square crops."""
from __future__ import annotations

import math

import cv2
import numpy as np


def _intersection_and_areas(box: np.ndarray, boxes: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    x0 = np.maximum(box[0], boxes[:, 0])
    y0 = np.maximum(box[1], boxes[:, 1])
    x1 = np.minimum(box[2], boxes[:, 2])
    y1 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter, area, areas


def iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection over union of one x0,y0,x1,y1 box against many."""
    inter, area, areas = _intersection_and_areas(box, boxes)
    return inter / np.maximum(area + areas - inter, 1e-9)


def overlap_of_smaller(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection over the smaller area: near 1 when one box lies inside the other."""
    inter, area, areas = _intersection_and_areas(box, boxes)
    return inter / np.maximum(np.minimum(area, areas), 1e-9)


def rotated_square(center: np.ndarray, side: float, angle: float, size: int) -> np.ndarray:
    """The 2x3 affine taking image pixels to a size x size crop of `side` image pixels around `center`,
    rotated by `angle` radians (the crop's x axis follows that direction in the image)."""
    scale = size / side
    cos, sin = math.cos(angle) * scale, math.sin(angle) * scale
    cx, cy = float(center[0]), float(center[1])
    return np.array(
        [[cos, sin, size / 2 - (cos * cx + sin * cy)], [-sin, cos, size / 2 - (-sin * cx + cos * cy)]],
        dtype=np.float64,
    )


def invert_affine(matrix: np.ndarray) -> np.ndarray:
    return cv2.invertAffineTransform(matrix)


def apply_affine(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Map N x 2 points through a 2x3 affine."""
    return points @ matrix[:, :2].T + matrix[:, 2]


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> np.ndarray:
    """Indices of the boxes kept by non-maximum suppression, best score first: each box in turn, highest score
    first (ties in their given order), is kept unless its IoU with a box already kept is above `threshold`."""
    kept: list[int] = []
    for index in np.argsort(-np.asarray(scores), kind="stable"):
        if not kept or not (iou(boxes[index], boxes[kept]) > threshold).any():
            kept.append(int(index))
    return np.array(kept, dtype=np.int64)

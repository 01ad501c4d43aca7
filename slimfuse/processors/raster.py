"""Triangle rasterisation in a few whole-array operations.

The mesh swapper labels every pixel of a face with the triangle it lies in (about 900 triangles a face). Drawing
them one `cv2.fillConvexPoly` call at a time costs a Python round trip per triangle, and in a video each round
trip also hands the interpreter lock to another thread and back; here all triangles are tested at once, each
against the pixels of its own bounding box.
"""
from __future__ import annotations

import numpy as np


def triangle_labels(corners: np.ndarray, labels: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """int32 image of `shape` holding, at each pixel, the label of the last triangle (in the order given) that
    covers it, and 0 where none does.

    corners: (k, 3, 2) pixel coordinates, a whole number being a pixel's centre; labels: (k,) positive ints. A pixel
    is covered when its centre lies in the triangle or on its edge, so triangles that share an edge leave no gap
    between them, and a sliver thinner than a pixel covers next to nothing (its map would be degenerate); either
    orientation counts."""
    h, w = shape
    flat = np.zeros(h * w, dtype=np.int32)
    c = np.asarray(corners, dtype=np.float64).reshape(-1, 3, 2)
    if len(c) == 0 or h == 0 or w == 0:
        return flat.reshape(h, w)
    y0 = np.clip(np.ceil(c[..., 1].min(1) - 1e-6), 0, h).astype(np.int64)
    y1 = np.clip(np.floor(c[..., 1].max(1) + 1e-6), -1, h - 1).astype(np.int64)
    rows = np.maximum(y1 - y0 + 1, 0)
    if int(rows.sum()) == 0:
        return flat.reshape(h, w)
    # One span per triangle and pixel row: the pixels whose centres lie in the triangle (or on its edge), from its
    # three edge functions a x + b y + c >= 0, signed by the orientation.
    triangle = np.repeat(np.arange(len(c)), rows)
    y = _runs(y0, rows)
    area = (c[:, 1, 0] - c[:, 0, 0]) * (c[:, 2, 1] - c[:, 0, 1]) - (c[:, 1, 1] - c[:, 0, 1]) * (c[:, 2, 0] - c[:, 0, 0])
    sign = np.where(area < 0, -1.0, 1.0)
    left = np.full(len(y), -np.inf)
    right = np.full(len(y), np.inf)
    for start, end in ((0, 1), (1, 2), (2, 0)):
        ax, ay, bx, by = c[:, start, 0], c[:, start, 1], c[:, end, 0], c[:, end, 1]
        a = -sign * (by - ay)
        b = sign * (bx - ax)
        offset = -(a * ax + b * ay) + 1e-6 * (np.abs(a) + np.abs(b))  # a centre on an edge counts
        slope = a[triangle]
        rest = b[triangle] * y + offset[triangle]
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = -rest / slope
        left = np.where(slope > 0, np.maximum(left, bound), left)
        right = np.where(slope < 0, np.minimum(right, bound), right)
        right = np.where((slope == 0) & (rest < 0), -np.inf, right)
    first = np.maximum(np.ceil(left), 0)
    last = np.minimum(np.floor(right), w - 1)
    counts = np.maximum(last - first + 1, 0).astype(np.int64)
    total = int(counts.sum())
    if total == 0:
        return flat.reshape(h, w)
    starts = y * w + np.where(counts > 0, first, 0).astype(np.int64)
    pixel = _runs(starts, counts)
    # The spans run in drawing order and np.put writes its values in order, so where triangles overlap the last
    # one drawn wins.
    np.put(flat, pixel, np.repeat(np.asarray(labels, dtype=np.int32)[triangle], counts))
    return flat.reshape(h, w)


def _runs(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """starts[i], starts[i] + 1, ... starts[i] + counts[i] - 1 for each i in turn, concatenated (int64)."""
    ends = np.cumsum(counts)
    return np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)

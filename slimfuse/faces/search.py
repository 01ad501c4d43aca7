"""Where the detector looks besides the frame as it is: the frame with a black margin (--face-detector-margin), so
a face cut by the frame's edge is seen whole enough, and the frame turned by 90, 180 or 270 degrees
(--face-detector-angles), for faces lying on their side or upside down, as FaceFusion searches; the faces found
are mapped back into the frame and merged by weighted non-maximum suppression.

Turns are exact (numpy's rot90: no resampling); angles count counter-clockwise, as OpenCV's and FaceFusion's do.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from slimfuse.faces.blazeface import weighted_nms
from slimfuse.faces.track import Detector
from slimfuse.faces.types import Face

Margin = tuple[int, int, int, int]
"""Top, right, bottom, left, in percent of half the frame's height (top, bottom) or width (right, left)."""
NMS_IOU_BY_ANGLES = {1: 0.4, 2: 0.3, 3: 0.2, 4: 0.1}
"""The overlap above which the faces of several searches are one face, by the number of angles (FaceFusion's: the
boxes of one face found at different angles overlap less the more angles there are)."""


def margin_pixels(shape: tuple[int, ...], margin: Margin) -> Margin:
    """The margin in pixels of a frame of `shape` (each percent of half the frame's side, as FaceFusion has it)."""
    height, width = shape[:2]
    top, right, bottom, left = margin
    return (int(height * top / 200), int(width * right / 200), int(height * bottom / 200), int(width * left / 200))


def turned_back(points: np.ndarray, quarter_turns: int, width: int, height: int) -> np.ndarray:
    """Points (..., 2) of the frame turned by `quarter_turns` x 90 degrees counter-clockwise (np.rot90), in the
    pixels of the frame before it was turned (`width` x `height`)."""
    x, y = points[..., 0], points[..., 1]
    if quarter_turns == 1:
        back = (width - y, x)
    elif quarter_turns == 2:
        back = (width - x, height - y)
    elif quarter_turns == 3:
        back = (y, height - x)
    else:
        back = (x, y)
    return np.stack(back, axis=-1).astype(np.float32)


def _face_back(face: Face, quarter_turns: int, width: int, height: int, offset: np.ndarray) -> Face:
    x0, y0, x1, y1 = face.box
    corners = turned_back(np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float32), quarter_turns,
                          width, height) - offset
    box = np.concatenate([corners.min(0), corners.max(0)]).astype(np.float32)
    keypoints = turned_back(face.keypoints, quarter_turns, width, height) - offset
    return replace(face, box=box, keypoints=keypoints)


class SearchingDetector:
    """A detector run on the frame with a margin and at each angle; faces in the frame's pixels, largest first."""

    def __init__(self, detector: Detector, angles: Sequence[int] = (0,), margin: Margin = (0, 0, 0, 0)) -> None:
        self.detector = detector
        self.angles = tuple(dict.fromkeys(angles))
        self.margin = margin

    def detect(self, image: np.ndarray, scan_tiles: bool = True) -> list[Face]:
        top, right, bottom, left = margin_pixels(image.shape, self.margin)
        framed = image
        if top or right or bottom or left:
            framed = np.pad(image, ((top, bottom), (left, right), (0, 0)))
        offset = np.array([left, top], dtype=np.float32)
        height, width = framed.shape[:2]
        found: list[Face] = []
        for angle in self.angles:
            turns = angle // 90 % 4
            turned = np.ascontiguousarray(np.rot90(framed, turns)) if turns else framed
            found += [_face_back(face, turns, width, height, offset) for face in self.detector.detect(turned, scan_tiles)]
        if not found:
            return []
        if len(self.angles) > 1:
            merged = weighted_nms(np.array([face.box for face in found]), np.array([face.keypoints for face in found]),
                                  np.array([face.score for face in found]), NMS_IOU_BY_ANGLES[len(self.angles)])
            found = [Face(box=box, score=score, keypoints=points) for box, points, score in merged]
        return sorted(found, key=lambda face: -face.size)  # a face cut by the edge keeps its box past it

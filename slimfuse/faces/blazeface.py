"""Face detection with MediaPipe's BlazeFace models, at every face size.

The model sees a letterboxed square; small faces in large images are found by also running it on
overlapping tiles (half-overlapping, at sizes doubling from `tile_size`), and every detection is merged
by weighted non-maximum suppression.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np

from slimfuse.faces.geometry import iou, overlap_of_smaller
from slimfuse.faces.types import Face
from slimfuse.models.choices import BLAZEFACE



class Session(Protocol):
    def run(self, output_names: list[str] | None, feeds: dict[str, np.ndarray]) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class BlazeFaceSpec:
    model: str
    size: int
    input_name: str
    strides: tuple[int, ...]
    anchors_per_layer: int
    score_threshold: float

    def anchors(self) -> np.ndarray:
        """SSD anchor centres (N x 2, normalised); layers with the same stride share one grid."""
        centres: list[np.ndarray] = []
        index = 0
        while index < len(self.strides):
            stride = self.strides[index]
            repeats = 0
            while index < len(self.strides) and self.strides[index] == stride:
                repeats += 1
                index += 1
            cells = self.size // stride
            grid = (np.stack(np.meshgrid(np.arange(cells), np.arange(cells)), axis=-1).reshape(-1, 2) + 0.5) / cells
            centres.append(np.repeat(grid, self.anchors_per_layer * repeats, axis=0))
        return np.concatenate(centres).astype(np.float32)


SHORT_RANGE = BlazeFaceSpec(BLAZEFACE["short"], 128, "input", (8, 16, 16, 16), 2, 0.5)
FULL_RANGE = BlazeFaceSpec(BLAZEFACE["full"], 192, "input_1", (4,), 1, 0.6)
SPECS: dict[str, BlazeFaceSpec] = {"short": SHORT_RANGE, "full": FULL_RANGE}


@dataclass(frozen=True)
class DetectorOptions:
    model: str = "auto"
    """One of slimfuse.models.choices.BLAZEFACE_MODELS, or a neural detector's catalog name (see FaceAnalyser.detector)."""
    score: float | None = None
    """Overrides the model's own score threshold."""
    tile_size: int = 640
    nms_iou: float = 0.3
    angles: tuple[int, ...] = (0,)
    """Also search the frame turned by these angles (see slimfuse.faces.search)."""
    margin: tuple[int, int, int, int] = (0, 0, 0, 0)
    """A black margin around the frame, in percent (see slimfuse.faces.search)."""


def letterbox(image: np.ndarray, size: int) -> tuple[np.ndarray, float]:
    """Scale the longer side to `size`, pad right/bottom with black; returns [-1,1] NHWC input and the scale."""
    height, width = image.shape[:2]
    scale = size / max(height, width)
    matrix = np.array([[scale, 0, 0], [0, scale, 0]], dtype=np.float64)
    boxed = cv2.warpAffine(image, matrix, (size, size), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0))
    return (boxed.astype(np.float32) / 127.5 - 1.0)[None], scale


def decode(spec: BlazeFaceSpec, anchors: np.ndarray, regressors: np.ndarray, logits: np.ndarray,
           threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boxes (N x 4), keypoints (N x 6 x 2) in the model's normalised input frame, and scores."""
    scores = 1.0 / (1.0 + np.exp(-np.clip(logits.reshape(-1).astype(np.float64), -100, 100)))
    keep = scores >= threshold
    raw = regressors.reshape(-1, 16)[keep] / spec.size
    centres = anchors[keep]
    cx, cy = raw[:, 0] + centres[:, 0], raw[:, 1] + centres[:, 1]
    half_w, half_h = raw[:, 2] / 2, raw[:, 3] / 2
    boxes = np.stack([cx - half_w, cy - half_h, cx + half_w, cy + half_h], axis=1)
    keypoints = raw[:, 4:16].reshape(-1, 6, 2) + centres[:, None, :]
    return boxes, keypoints, scores[keep]


def weighted_nms(boxes: np.ndarray, keypoints: np.ndarray, scores: np.ndarray,
                 threshold: float) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Merge overlapping detections into their score-weighted average (steadier than plain NMS)."""
    order = np.argsort(-scores)
    boxes, keypoints, scores = boxes[order], keypoints[order], scores[order]
    remaining = np.ones(len(scores), dtype=bool)
    merged: list[tuple[np.ndarray, np.ndarray, float]] = []
    for index in range(len(scores)):
        if not remaining[index]:
            continue
        group = remaining & ((iou(boxes[index], boxes) > threshold) | (overlap_of_smaller(boxes[index], boxes) > 0.8))
        weights = scores[group][:, None]
        box = (boxes[group] * weights).sum(0) / weights.sum()
        points = (keypoints[group] * weights[:, :, None]).sum(0) / weights.sum()
        merged.append((box.astype(np.float32), points.astype(np.float32), float(scores[index])))
        remaining &= ~group
    return merged


def tiles(width: int, height: int, tile_size: int, scan: bool = True) -> Iterator[tuple[int, int, int]]:
    """The whole image, then (with `scan`) half-overlapping square tiles whose size doubles from `tile_size`."""
    yield 0, 0, max(width, height)
    if not scan:
        return
    side = tile_size
    while side * 1.25 < max(width, height):
        stride = side // 2
        for y in _starts(height, side, stride):
            for x in _starts(width, side, stride):
                yield x, y, side
        side *= 2


def _starts(length: int, side: int, stride: int) -> list[int]:
    if length <= side:
        return [0]
    starts = list(range(0, length - side, stride))
    return starts + [length - side]


class FaceDetector:
    def __init__(self, sessions: dict[str, Session], options: DetectorOptions = DetectorOptions()) -> None:
        """`sessions` maps "short" / "full" to a loaded session of that model."""
        self.sessions = sessions
        self.options = options
        self._anchors = {key: spec.anchors() for key, spec in SPECS.items()}

    @staticmethod
    def models_for(model: str) -> tuple[str, ...]:
        return ("short", "full") if model == "auto" else (model,)

    def detect(self, image: np.ndarray, scan_tiles: bool = True) -> list[Face]:
        """Every face, largest first; without `scan_tiles` only the whole image is searched (faster, misses
        small faces in large images)."""
        height, width = image.shape[:2]
        boxes: list[np.ndarray] = []
        points: list[np.ndarray] = []
        scores: list[np.ndarray] = []
        for key in self.models_for(self.options.model):
            spec = SPECS[key]
            # Tile sizes scale with the model's input so a face reaches the model at the same size in pixels.
            tile_size = int(self.options.tile_size * spec.size / FULL_RANGE.size)
            for x0, y0, side in tiles(width, height, tile_size, scan_tiles):
                whole = side >= max(width, height)
                if not whole and self.options.model == "auto" and key == "short":
                    continue  # near faces are the short-range model's job; tiles hold the small, distant ones
                crop = image[y0:y0 + side, x0:x0 + side]
                b, k, s = self._run(key, crop)
                if not whole:
                    b, k, s = drop_cut_faces(b, k, s, crop.shape, (x0, y0), (width, height))
                offset = np.array([x0, y0], dtype=np.float32)
                boxes.append(b + np.tile(offset, 2))
                points.append(k + offset)
                scores.append(s)
        if not scores or sum(len(s) for s in scores) == 0:
            return []
        merged = weighted_nms(np.concatenate(boxes), np.concatenate(points), np.concatenate(scores),
                              self.options.nms_iou)
        faces = [Face(box=_clip_box(box, width, height), score=score, keypoints=kps) for box, kps, score in merged]
        return sorted(faces, key=lambda face: -face.size)

    def _run(self, key: str, crop: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        spec = SPECS[key]
        tensor, scale = letterbox(crop, spec.size)
        regressors, logits = self.sessions[key].run(None, {spec.input_name: tensor})
        threshold = self.options.score if self.options.score is not None else spec.score_threshold
        boxes, keypoints, scores = decode(spec, self._anchors[key], regressors, logits, threshold)
        merged = weighted_nms(boxes, keypoints, scores, self.options.nms_iou) if len(scores) else []
        factor = spec.size / scale
        return (
            np.array([m[0] for m in merged], dtype=np.float32).reshape(-1, 4) * factor,
            np.array([m[1] for m in merged], dtype=np.float32).reshape(-1, 6, 2) * factor,
            np.array([m[2] for m in merged], dtype=np.float32),
        )


def drop_cut_faces(boxes: np.ndarray, keypoints: np.ndarray, scores: np.ndarray, shape: tuple[int, ...],
                    origin: tuple[int, int], image_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A face touching a tile edge inside the image is only part of a face: another tile holds all of it."""
    height, width = shape[:2]
    margin = 0.02 * max(width, height)
    x0, y0 = origin
    keep = np.ones(len(scores), dtype=bool)
    if x0 > 0:
        keep &= boxes[:, 0] > margin
    if y0 > 0:
        keep &= boxes[:, 1] > margin
    if x0 + width < image_size[0]:
        keep &= boxes[:, 2] < width - margin
    if y0 + height < image_size[1]:
        keep &= boxes[:, 3] < height - margin
    return boxes[keep], keypoints[keep], scores[keep]


def _clip_box(box: np.ndarray, width: int, height: int) -> np.ndarray:
    return np.clip(box, 0, [width, height, width, height]).astype(np.float32)

"""Face detection with the neural detectors users bring: SCRFD / RetinaFace, YuNet and YOLOv8-face.

Each model sees the image as FaceFusion 3.8.1 gives it: shrunk to fit the model's square when larger (never
enlarged), in its top-left corner on black, BGR; its outputs decode as FaceFusion's do, and the faces found go
through the same non-maximum suppression (`geometry.nms`, IoU 0.4). Large images are also searched in overlapping
tiles (`blazeface.tiles`) so small faces reach the model at full resolution; a face found in several tiles is kept
once, by the same suppression. The result has the same shape as `FaceDetector.detect`: faces largest first, boxes
within the image, 6 keypoints each (see `six_keypoints`).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import cv2
import numpy as np

from slimfuse.faces.blazeface import Session, drop_cut_faces, tiles
from slimfuse.faces.geometry import nms
from slimfuse.faces.types import Face
from slimfuse.models.neural.detectors import DETECTORS

Decoder = Literal["scrfd", "yunet", "yolo"]
Decoded = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Boxes (N, 4) x0 y0 x1 y1, points (N, 5, 2) and scores (N,)."""

STRIDES = (8, 16, 32)
EAR_ACROSS = 1.05
EAR_DOWN = 0.25

# How each model's outputs are laid out and whether it is fed BGR. FaceFusion feeds every detector its BGR frame
# (insightface's own SCRFD code and Ultralytics' would swap to RGB); slimfuse feeds them as FaceFusion does.
_LAYOUTS: MappingProxyType[str, tuple[Decoder, bool]] = MappingProxyType({
    "scrfd_2.5g": ("scrfd", True),
    "retinaface_10g": ("scrfd", True),
    "yunet": ("yunet", True),
    "yolo_face": ("yolo", True),
})


@dataclass(frozen=True)
class NeuralDetectorSpec:
    name: str
    decoder: Decoder
    size: int
    input_name: str
    bgr: bool
    offset: tuple[float, float, float]
    divisor: tuple[float, float, float]
    """Input = (pixel 0..255 - offset) / divisor, per channel in the model's order."""


def detector_spec(name: str) -> NeuralDetectorSpec:
    """The facts `NeuralFaceDetector` needs about catalog detector `name`."""
    model = DETECTORS[name]
    io = model.io
    if io is None or io.crop_size is None:
        raise ValueError(f"{name}: the catalog entry lacks its input size")
    decoder, bgr = _LAYOUTS[name]
    order = slice(None, None, -1) if bgr else slice(None)
    return NeuralDetectorSpec(
        name=name, decoder=decoder, size=io.crop_size, input_name=io.inputs[0].name, bgr=bgr,
        offset=tuple(255.0 * m for m in io.mean[order]),  # type: ignore[arg-type]
        divisor=tuple(255.0 * s for s in io.std[order]),  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class NeuralDetectorOptions:
    score: float = 0.5
    nms_iou: float = 0.4
    tile_size: int = 640
    """Smallest tile, in image pixels, that large images are searched in for small faces."""


@dataclass(frozen=True)
class Detection:
    """One face as a 5-point detector sees it, in image pixels.

    points: (5, 2) right eye, left eye, nose tip, right mouth corner, left mouth corner (the subject's right
    and left, so the right eye appears on the image's left), the order of SCRFD, YuNet and YOLOv8-face.
    """

    box: np.ndarray
    score: float
    points: np.ndarray

    def face(self) -> Face:
        return Face(box=self.box, score=self.score, keypoints=six_keypoints(self.points))


def six_keypoints(points: np.ndarray) -> np.ndarray:
    """Face's 6 keypoints (right eye, left eye, nose tip, mouth, right ear, left ear) from the 5 points.

    The mouth is the middle of its corners. The ears (tragion) are not seen by 5-point detectors, so they are an
    estimate: EAR_ACROSS eye distances out from the eyes' midpoint along the eye line and EAR_DOWN of the way
    down towards the mouth, the proportions BlazeFace's own ear points have on the frontal test photos. They
    follow roll and scale, not yaw; nothing in slimfuse relies on them being exact.
    """
    right_eye, left_eye, nose = points[0], points[1], points[2]
    mouth = (points[3] + points[4]) / 2
    eyes = (right_eye + left_eye) / 2
    across = left_eye - right_eye
    down = mouth - eyes
    right_ear = eyes - EAR_ACROSS * across + EAR_DOWN * down
    left_ear = eyes + EAR_ACROSS * across + EAR_DOWN * down
    return np.stack([right_eye, left_eye, nose, mouth, right_ear, left_ear]).astype(np.float32)


def letterbox(image: np.ndarray, spec: NeuralDetectorSpec) -> tuple[np.ndarray, np.ndarray]:
    """The NCHW float32 input of RGB `image`: shrunk (bilinear) to fit the model's square when larger, never enlarged,
    in its top-left corner on black; and the image pixels per input pixel along x and y, to map detections back."""
    height, width = image.shape[:2]
    fitted = image
    if height > spec.size or width > spec.size:
        scale = min(spec.size / height, spec.size / width)
        # FaceFusion's sizes (truncated), so that both feed the model the same picture
        fitted = cv2.resize(image, (int(width * scale), int(height * scale)), interpolation=cv2.INTER_LINEAR)
    boxed = np.zeros((spec.size, spec.size, 3), dtype=np.uint8)
    boxed[:fitted.shape[0], :fitted.shape[1]] = fitted
    if spec.bgr:
        boxed = boxed[:, :, ::-1]
    tensor = (boxed.astype(np.float32) - np.float32(spec.offset)) / np.float32(spec.divisor)
    ratio = np.array([width / fitted.shape[1], height / fitted.shape[0]])
    return np.ascontiguousarray(tensor.transpose(2, 0, 1)[None]), ratio


def anchor_points(size: int, stride: int, per_cell: int) -> np.ndarray:
    """(N, 2) x, y of every anchor: the top-left corner of its cell, rows outer, `per_cell` repeats innermost."""
    cells = size // stride
    ys, xs = np.mgrid[:cells, :cells]
    corners = np.stack([xs, ys], axis=-1).reshape(-1, 2).astype(np.float32) * stride
    return np.repeat(corners, per_cell, axis=0)


def decode_scrfd(outputs: list[np.ndarray], size: int, threshold: float) -> Decoded:
    """SCRFD / RetinaFace: per stride, scores, then (left, top, right, bottom) distances and keypoint offsets
    from the anchor, in units of the stride; outputs ordered scores x3, boxes x3, keypoints x3. Every decoder keeps
    the anchors scoring above `threshold`, in the model's order, in input pixels."""
    found: list[Decoded] = []
    for index, stride in enumerate(STRIDES):
        scores = outputs[index].reshape(-1)
        keep = scores > threshold
        anchors = anchor_points(size, stride, 2)[keep]
        distances = outputs[index + 3].reshape(-1, 4)[keep] * stride
        offsets = outputs[index + 6].reshape(-1, 5, 2)[keep] * stride
        boxes = np.concatenate([anchors - distances[:, :2], anchors + distances[:, 2:]], axis=1)
        found.append((boxes, anchors[:, None, :] + offsets, scores[keep]))
    return _concatenate(found)


def decode_yunet(outputs: list[np.ndarray], size: int, threshold: float) -> Decoded:
    """YuNet 2023mar: per stride, class and objectness scores (the score is their product, as FaceFusion has it;
    OpenCV's FaceDetectorYN takes its square root), a box as centre offset and log size, and keypoint offsets, in
    units of the stride; outputs ordered cls x3, obj x3, bbox x3, kps x3."""
    found: list[Decoded] = []
    for index, stride in enumerate(STRIDES):
        scores = outputs[index].reshape(-1) * outputs[index + 3].reshape(-1)
        keep = scores > threshold
        anchors = anchor_points(size, stride, 1)[keep]
        raw = outputs[index + 6].reshape(-1, 4)[keep]
        centres = anchors + raw[:, :2] * stride
        half = np.exp(raw[:, 2:]) * stride / 2
        points = anchors[:, None, :] + outputs[index + 9].reshape(-1, 5, 2)[keep] * stride
        found.append((np.concatenate([centres - half, centres + half], axis=1), points, scores[keep]))
    return _concatenate(found)


def decode_yolo(outputs: list[np.ndarray], size: int, threshold: float) -> Decoded:
    """YOLOv8-face: one [1, 20, N] output; per anchor cx, cy, w, h, score, then 5 x (x, y, visibility), all in
    input pixels (the head has already applied its anchors and strides)."""
    rows = outputs[0].reshape(20, -1).T
    keep = rows[:, 4] > threshold
    rows = rows[keep]
    centres, half = rows[:, :2], rows[:, 2:4] / 2
    points = rows[:, 5:20].reshape(-1, 5, 3)[:, :, :2]
    return np.concatenate([centres - half, centres + half], axis=1), points, rows[:, 4]


_DECODERS = MappingProxyType({"scrfd": decode_scrfd, "yunet": decode_yunet, "yolo": decode_yolo})


def _concatenate(parts: list[Decoded]) -> Decoded:
    return (
        np.concatenate([p[0] for p in parts]).astype(np.float32).reshape(-1, 4),
        np.concatenate([p[1] for p in parts]).astype(np.float32).reshape(-1, 5, 2),
        np.concatenate([p[2] for p in parts]).astype(np.float32),
    )


class NeuralFaceDetector:
    def __init__(self, session: Session, spec: NeuralDetectorSpec,
                 options: NeuralDetectorOptions = NeuralDetectorOptions()) -> None:
        self.session = session
        self.spec = spec
        self.options = options

    def detect(self, image: np.ndarray, scan_tiles: bool = True) -> list[Face]:
        """Every face, largest first, in the Face contract (6 keypoints); see FaceDetector.detect."""
        return [detection.face() for detection in self.detections(image, scan_tiles)]

    def detections(self, image: np.ndarray, scan_tiles: bool = True) -> list[Detection]:
        """Every face with the model's own 5 points, largest first."""
        height, width = image.shape[:2]
        found: list[Decoded] = []
        for x0, y0, side in tiles(width, height, self.options.tile_size, scan_tiles):
            crop = image[y0:y0 + side, x0:x0 + side]
            boxes, points, scores = self.run(crop)
            if side < max(width, height):
                boxes, points, scores = drop_cut_faces(boxes, points, scores, crop.shape, (x0, y0), (width, height))
            offset = np.array([x0, y0], dtype=np.float32)
            found.append((boxes + np.tile(offset, 2), points + offset, scores))
        boxes, points, scores = _concatenate(found)
        keep = nms(boxes, scores, self.options.nms_iou)  # one face seen in several tiles
        limit = np.array([width, height, width, height], dtype=np.float32)
        detections = [Detection(box=np.clip(boxes[i], 0, limit).astype(np.float32), score=float(scores[i]),
                                points=points[i]) for i in keep]
        return sorted(detections, key=lambda d: -float(max(d.box[2] - d.box[0], d.box[3] - d.box[1])))

    def run(self, crop: np.ndarray) -> Decoded:
        """The model's detections in one image (or tile), in that image's pixels, after non-maximum suppression
        there (best score first), boxes not clipped."""
        tensor, ratio = letterbox(crop, self.spec)
        outputs = self.session.run(None, {self.spec.input_name: tensor})
        boxes, points, scores = self.decode(outputs, ratio)
        keep = nms(boxes, scores, self.options.nms_iou)
        return boxes[keep], points[keep], scores[keep]

    def decode(self, outputs: list[np.ndarray], ratio: np.ndarray) -> Decoded:
        """Every face in the model's outputs scoring above the threshold, in the model's order, mapped to the
        image by `ratio` (image pixels per input pixel along x and y; see `letterbox`)."""
        boxes, points, scores = _DECODERS[self.spec.decoder](outputs, self.spec.size, self.options.score)
        return (
            (boxes * np.tile(ratio, 2)).astype(np.float32),
            (points * ratio).astype(np.float32),
            scores,
        )

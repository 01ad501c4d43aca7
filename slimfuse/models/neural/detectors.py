"""Catalog entries: the neural face detectors users bring (none ships in a registry package; see the README).

Facts (FaceFusion 3.8.1's face_detector.py, insightface's SCRFD code, OpenCV's YuNet, Ultralytics' YOLOv8 head;
read, not copied). FaceFusion feeds every detector its frame in BGR order, the frame shrunk to fit when larger and
put in the input's top-left corner on black; slimfuse does the same (`faces.neural_detect.letterbox`).
- scrfd_2.5g, retinaface_10g (InsightFace SCRFD family): input `input` [1, 3, H, W], (x - 127.5) / 128,
  H = W = 640 by default (FaceFusion offers 160 to 640); 9 outputs by position: scores, box distances, keypoint
  offsets for strides 8, 16, 32, each [N, C] without a batch axis (N = (640 / stride)^2 x 2 anchors).
- yunet_2023_mar (OpenCV): input `input` [1, 3, H, W], 0..255; 12 outputs cls_8/16/32, obj_8/16/32,
  bbox_8/16/32, kps_8/16/32, each [1, N, C] with one anchor per cell; a face's score is cls x obj.
- yoloface_8n (YOLOv8n-face): input `input` [1, 3, 640, 640], / 255; one output [1, 20, 8400]: cx, cy, w, h,
  score, then 5 x (x, y, visibility), all in input pixels.
The decoders read outputs by position, as FaceFusion does, so the output names below (upstream export names)
are recorded for reference only. The mean and std below are per channel, the same for R, G and B.
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from slimfuse.models.neural.sources import facefusion_urls, neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

DETECTOR_SIZE = 640
_STRIDES = (8, 16, 32)
_INSIGHTFACE = "non-commercial research only (InsightFace)"


def _cells(stride: int) -> int:
    return (DETECTOR_SIZE // stride) ** 2


def _scrfd_io() -> ModelIO:
    # SCRFD's 2 anchors per cell; the sizes are those at 640 px (the outputs follow the input size).
    outputs = tuple(
        TensorSpec(f"{kind}_{stride}", (f"anchors_{stride}", width))
        for kind, width in (("score", 1), ("bbox", 4), ("kps", 10))
        for stride in _STRIDES
    )
    return ModelIO(
        inputs=(TensorSpec("input", (1, 3, "height", "width")),),
        outputs=outputs,
        crop_size=DETECTOR_SIZE,
        mean=(0.5, 0.5, 0.5),
        std=(128 / 255, 128 / 255, 128 / 255),
    )


def _yunet_io() -> ModelIO:
    outputs = tuple(
        TensorSpec(f"{kind}_{stride}", (1, f"cells_{stride}", width))
        for kind, width in (("cls", 1), ("obj", 1), ("bbox", 4), ("kps", 10))
        for stride in _STRIDES
    )
    # BGR 0..255: mean 0 and std 1/255 give back x itself; the channel order is the detector's business.
    return ModelIO(
        inputs=(TensorSpec("input", (1, 3, "height", "width")),),
        outputs=outputs,
        crop_size=DETECTOR_SIZE,
        std=(1 / 255, 1 / 255, 1 / 255),
    )


def _yolo_io() -> ModelIO:
    anchors = sum(_cells(stride) for stride in _STRIDES)
    return ModelIO(
        inputs=(TensorSpec("input", (1, 3, DETECTOR_SIZE, DETECTOR_SIZE)),),
        outputs=(TensorSpec("output", (1, 20, anchors)),),
        crop_size=DETECTOR_SIZE,
    )


def _renamed(spec: ModelSpec, filename: str, release: str) -> ModelSpec:
    return replace(spec, filename=filename, source_name=filename, urls=facefusion_urls(release, filename))


MODELS: tuple[ModelSpec, ...] = (
    neural_spec(
        "scrfd_2.5g", "detector", _INSIGHTFACE,
        "SCRFD 2.5G face detector with 5 keypoints, 640 px; fast, good on small faces", "models-3.0.0",
        _scrfd_io()),
    neural_spec(
        "retinaface_10g", "detector", _INSIGHTFACE,
        "InsightFace 10G face detector (SCRFD layout) with 5 keypoints, 640 px; the most accurate here",
        "models-3.0.0", _scrfd_io()),
    _renamed(neural_spec(
        "yunet", "detector", "MIT (OpenCV YuNet)",
        "YuNet 2023mar face detector with 5 keypoints, 640 px; very small and fast", "models-3.4.0",
        _yunet_io()), "yunet_2023_mar.onnx", "models-3.4.0"),
    _renamed(neural_spec(
        "yolo_face", "detector", "GPL-3.0 (yolov8-face, derronqi; the file's metadata says AGPL-3.0 Ultralytics)",
        "YOLOv8n-face detector with 5 keypoints, 640 px", "models-3.0.0",
        _yolo_io(), size=12_659_761), "yoloface_8n.onnx", "models-3.0.0"),
)

DETECTOR_NAMES: tuple[str, ...] = tuple(spec.name for spec in MODELS)
"""The `--face-detector-model` choices these entries add (catalog names are the choices)."""

DETECTORS = MappingProxyType({spec.name: spec for spec in MODELS})

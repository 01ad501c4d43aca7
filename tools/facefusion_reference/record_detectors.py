"""Reference outputs of FaceFusion 3.8.1's face detectors: the detect frame, the raw outputs, the decoded faces.

For each detector (scrfd, retinaface, yolo_face, yunet on parity stand-ins), each photo (the astronaut, Grace
Hopper's portrait, which is not square) and each size (FaceFusion's default 640x640; scrfd and retinaface also at
320x320, where FaceFusion shrinks the photos), FaceFusion's `detect_faces` runs with its defaults (score 0.5, no
margin, angle 0) through a session that records what it is fed and gives, then `apply_nms` as `create_faces` calls
it. `MODEL_PHOTO_SIZE.npz` holds:
- `input_shape`, `input_sample`: the tensor fed to the model, at every 8th row and column (normalisation, channel
  order, the place of the photo in it);
- `restricted_shape`: (height, width) of the photo as FaceFusion shrank it to fit (`restrict_frame`); where it did
  shrink it, `restricted_PHOTO_SIZE.npz` holds that picture (`restricted`, RGB uint8), the whole content of the
  tensor (the same for every detector: checked here);
- `raw_axis` and, per output I, `raw_I_shape`, `raw_I_index` and `raw_I`: the model's outputs at the anchors whose
  score is at least RAW_FLOOR (every other anchor scores below the threshold, so decoding ignores it): the outputs
  filled with 0 elsewhere decode to the same faces, which is checked here by running FaceFusion's decoding on them;
- `boxes`, `scores`, `points`: every face FaceFusion decoded (before NMS), in frame pixels, in its order;
- `keep`: the indices `apply_nms` kept (the faces FaceFusion goes on with), best score first.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import common

AREA = "detectors"
MODELS = {"scrfd": "scrfd_2.5g", "retinaface": "retinaface_10g", "yolo_face": "yoloface_8n",
          "yunet": "yunet_2023_mar"}
"""FaceFusion's detector names and their files (the stand-ins' names)."""
SIZES = {"scrfd": (640, 320), "retinaface": (640, 320), "yolo_face": (640,), "yunet": (640,)}
RANGES = {"scrfd": [-1, 1], "retinaface": [-1, 1], "yolo_face": [0, 1], "yunet": [0, 255]}
"""The normalisation each detect function asks of `normalize_detect_frame`."""
RAW_FLOOR = 0.2
SAMPLE_STEP = 8


class RecordingSession:
    """A session that keeps what it was fed and what it gave."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.feeds: dict[str, np.ndarray] = {}
        self.outputs: list[np.ndarray] = []

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.feeds = dict(feeds)
        outputs = self.session.run(names, feeds)
        self.outputs = [output.copy() for output in outputs]  # FaceFusion's yolo decoding writes into its outputs
        return outputs


class ReplaySession:
    """A session that gives fixed outputs."""

    def __init__(self, outputs: list[np.ndarray]) -> None:
        self.outputs = outputs

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [output.copy() for output in self.outputs]


def pool(model: str, session: Any) -> Any:
    """FaceFusion's `get_inference_pool` of the face detector, giving `session`."""
    return lambda: {model: session}


def anchor_scores(model: str, outputs: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
    """The outputs' anchor axis and, per output, the score of each anchor along it (FaceFusion's score)."""
    if model in ("scrfd", "retinaface"):
        return 0, [outputs[index % 3].reshape(-1) for index in range(len(outputs))]
    if model == "yunet":
        return 1, [(outputs[index % 3] * outputs[index % 3 + 3]).reshape(-1) for index in range(len(outputs))]
    return 2, [outputs[0][0, 4]]


def sparse(model: str, outputs: list[np.ndarray]) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """The outputs at the anchors scoring RAW_FLOOR or more (arrays to save), and the outputs zero elsewhere."""
    axis, scores = anchor_scores(model, outputs)
    arrays: dict[str, np.ndarray] = {"raw_axis": np.array(axis)}
    filled = []
    for index, (output, score) in enumerate(zip(outputs, scores, strict=True)):
        rows = np.flatnonzero(score >= RAW_FLOOR)
        values = np.take(output, rows, axis=axis)
        arrays[f"raw_{index}_shape"] = np.array(output.shape)
        arrays[f"raw_{index}_index"] = rows.astype(np.int32)
        arrays[f"raw_{index}"] = values
        zeros = np.zeros_like(output)
        slicer: list[Any] = [slice(None)] * output.ndim
        slicer[axis] = rows
        zeros[tuple(slicer)] = values
        filled.append(zeros)
    return arrays, filled


def same_faces(a: tuple[list, list, list], b: tuple[list, list, list]) -> bool:
    return len(a[0]) == len(b[0]) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b, strict=True))


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import face_detector, state_manager
    from facefusion.face_helper import apply_nms, get_nms_threshold
    from facefusion.vision import restrict_frame

    for key, value in (("face_detector_score", 0.5), ("face_detector_margin", (0, 0, 0, 0)),
                       ("face_detector_angles", [0]), ("execution_providers", ["cpu"])):
        state_manager.init_item(key, value)
    photos = {"astronaut": inputs.target_bgr, "grace_hopper": inputs.source_bgr}
    written = []
    shrunk: set[tuple[str, int]] = set()
    for model, file in MODELS.items():
        recording = RecordingSession(common.session(file, models))
        state_manager.init_item("face_detector_model", model)
        for size in SIZES[model]:
            state_manager.init_item("face_detector_size", f"{size}x{size}")
            for photo, frame in photos.items():
                face_detector.get_inference_pool = pool(model, recording)
                found = face_detector.detect_faces(frame)
                tensor = recording.feeds["input"]
                arrays, filled = sparse(model, recording.outputs)
                face_detector.get_inference_pool = pool(model, ReplaySession(filled))
                if not same_faces(found, face_detector.detect_faces(frame)):
                    raise SystemExit(f"{model} {photo} {size}: the outputs kept do not decode to FaceFusion's faces")
                boxes, scores, points = found
                keep = apply_nms(boxes, scores, 0.5, get_nms_threshold(model, [0]))
                restricted = restrict_frame(frame, (size, size))
                content = face_detector.prepare_detect_frame(restricted, f"{size}x{size}")
                if not np.array_equal(face_detector.normalize_detect_frame(content, RANGES[model]), tensor):
                    raise SystemExit(f"{model} {photo} {size}: the tensor is not the restricted frame, normalised")
                arrays.update(
                    input_shape=np.array(tensor.shape), input_sample=tensor[:, :, ::SAMPLE_STEP, ::SAMPLE_STEP],
                    restricted_shape=np.array(restricted.shape[:2]),
                    boxes=np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
                    scores=np.asarray(scores, dtype=np.float64),
                    points=np.asarray(points, dtype=np.float64).reshape(-1, 5, 2),
                    keep=np.asarray(keep, dtype=np.int64).reshape(-1))
                if restricted.shape != frame.shape and (photo, size) not in shrunk:
                    shrunk.add((photo, size))
                    written.append(common.save(AREA, f"restricted_{photo}_{size}", {"restricted": common.rgb(restricted)}))
                written.append(common.save(AREA, f"{model}_{photo}_{size}", arrays))
    return written

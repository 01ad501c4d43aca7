"""The neural detectors (SCRFD / RetinaFace, YuNet, YOLOv8-face) on stand-in ONNX models.

The real weights cannot be fetched here, so each test builds a graph with the real model's input and output
names and shapes (from the catalog) whose outputs are known: constants with scores planted at chosen anchors,
or, for tiling, a "marker detector" that fires where it sees a magenta pixel with a green right neighbour.
Decoding must give back exactly the planted boxes and points, mapped from the letterbox to image pixels.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import neural_models as nm
from scenes import ASTRONAUT_FACE, GRACE_HOPPER_FACE, place
from slimfuse.faces.neural_detect import (
    Detection, NeuralDetectorOptions, NeuralFaceDetector, detector_spec, letterbox, six_keypoints,
)

SIZE = nm.DETECTOR_SIZE


def _session(tmp_path: Path, name: str, nodes: list[onnx.NodeProto], outputs: list[np.ndarray],
             initializers: list[onnx.TensorProto] = ()):  # type: ignore[assignment]
    """A session of a graph with the catalog entry's input, and its outputs (in catalog order) shaped as given."""
    return nm.session_of(nm.detector_graph(name, nodes, outputs, initializers), tmp_path, name)


def _constant_session(tmp_path: Path, name: str, outputs: list[np.ndarray]):  # type: ignore[no-untyped-def]
    return _session(tmp_path, name, nm.constant_outputs(name, outputs), outputs)


# Planted faces: (stride, row, col, score, box as x0 y0 x1 y1 and 5 points, all in letterbox pixels).
PLANTS = [
    (16, 12, 15, 0.9, (200.0, 150.0, 300.0, 290.0),
     ((225.0, 200.0), (275.0, 201.0), (250.0, 230.0), (230.0, 260.0), (270.0, 261.0))),
    (8, 50, 40, 0.7, (300.0, 380.0, 350.0, 440.0),
     ((312.0, 400.0), (338.0, 399.0), (325.0, 415.0), (315.0, 428.0), (335.0, 427.0))),
]


@pytest.mark.parametrize("name", list(nm.DETECTOR_PLANTERS))
@pytest.mark.parametrize("photo_name", ["grace_hopper", "astronaut"])
@pytest.mark.parametrize("enlarged", [1, 2], ids=["fits", "shrunk"])
def test_decoding_gives_back_the_planted_faces_in_image_pixels(tmp_path: Path, name: str, photo_name: str,
                                                               enlarged: int, request: pytest.FixtureRequest) -> None:
    photo = request.getfixturevalue(photo_name)
    photo = cv2.resize(photo, None, fx=enlarged, fy=enlarged) if enlarged > 1 else photo
    session = _constant_session(tmp_path, name, nm.DETECTOR_PLANTERS[name](PLANTS))
    found = NeuralFaceDetector(session, detector_spec(name)).detections(photo, scan_tiles=False)
    # a photo that fits is never enlarged; a larger one is shrunk to FaceFusion's (truncated) size
    height, width = photo.shape[:2]
    scale = min(1.0, SIZE / height, SIZE / width)
    ratio = np.array([width / int(width * scale), height / int(height * scale)])
    assert len(found) == len(PLANTS)
    for detection, (_, _, _, score, box, kps) in zip(found, PLANTS, strict=True):  # largest first
        np.testing.assert_allclose(detection.box, np.array(box) * np.tile(ratio, 2), atol=1e-3)
        np.testing.assert_allclose(detection.points, np.array(kps) * ratio, atol=1e-3)
        assert detection.score == pytest.approx(score, abs=1e-5)


def test_overlapping_faces_keep_the_best_one_as_it_is(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    base = PLANTS[0]
    shifted = (16, 12, 16, 0.6, tuple(v + 6.0 for v in base[4]), tuple((x + 6.0, y + 2.0) for x, y in base[5]))
    beside = (16, 12, 19, 0.8, (260.0, 150.0, 360.0, 290.0), tuple((x + 60.0, y) for x, y in base[5]))  # IoU 0.25
    weak = (16, 30, 30, 0.5, (440.0, 460.0, 520.0, 560.0), base[5])  # not above the 0.5 score threshold
    session = _constant_session(tmp_path, "scrfd_2.5g", nm.scrfd_outputs([base, shifted, beside, weak]))
    found = NeuralFaceDetector(session, detector_spec("scrfd_2.5g")).detections(grace_hopper)
    assert sorted(detection.score for detection in found) == pytest.approx([0.8, 0.9])
    best = max(found, key=lambda detection: detection.score)
    np.testing.assert_allclose(best.box, base[4], atol=1e-3)  # the overlapping 0.6 is dropped, not averaged in
    np.testing.assert_allclose(best.points, base[5], atol=1e-3)


def test_faces_follow_the_face_contract(tmp_path: Path, astronaut: np.ndarray) -> None:
    session = _constant_session(tmp_path, "yolo_face", nm.yolo_outputs(PLANTS))
    detector = NeuralFaceDetector(session, detector_spec("yolo_face"))
    faces, detections = detector.detect(astronaut), detector.detections(astronaut)
    assert [face.size for face in faces] == sorted((face.size for face in faces), reverse=True)
    for face, detection in zip(faces, detections, strict=True):
        assert face.keypoints.shape == (6, 2) and face.landmarks is None
        np.testing.assert_array_equal(face.keypoints[:3], detection.points[:3])
        np.testing.assert_allclose(face.keypoints[3], detection.points[3:].mean(0), atol=1e-4)


def test_ears_are_placed_symmetrically_beside_the_eyes() -> None:
    points = np.array([[40.0, 50.0], [60.0, 50.0], [50.0, 60.0], [43.0, 70.0], [57.0, 70.0]])
    keypoints = six_keypoints(points)
    right_ear, left_ear = keypoints[4], keypoints[5]
    assert right_ear[0] < points[0, 0] and left_ear[0] > points[1, 0]  # outside the eyes
    assert right_ear[1] == left_ear[1] and 50.0 < right_ear[1] < 70.0  # below the eyes, above the mouth
    assert (right_ear[0] + left_ear[0]) / 2 == pytest.approx(50.0)
    turned = Detection(box=np.zeros(4, np.float32), score=1.0, points=points[:, ::-1].copy()).face().keypoints
    np.testing.assert_allclose(turned[4:], keypoints[4:, ::-1])  # follows the face's roll (here a transpose)


def test_input_normalisation_and_channel_order() -> None:
    image = np.zeros((32, 64, 3), np.uint8)
    image[..., 0], image[..., 1], image[..., 2] = 200, 100, 10
    scrfd, ratio = letterbox(image, detector_spec("scrfd_2.5g"))
    yunet, _ = letterbox(image, detector_spec("yunet"))
    yolo, _ = letterbox(image, detector_spec("yolo_face"))
    assert scrfd.shape == (1, 3, SIZE, SIZE) and list(ratio) == [1.0, 1.0]  # not enlarged
    bgr = np.array([10, 100, 200])  # every detector is fed BGR, as FaceFusion feeds its frames
    np.testing.assert_allclose(scrfd[0, :, 5, 5], (bgr - 127.5) / 128, rtol=1e-6)
    np.testing.assert_allclose(yunet[0, :, 5, 5], bgr)  # 0..255
    np.testing.assert_allclose(yolo[0, :, 5, 5], bgr / 255, rtol=1e-6)
    for x, y in ((64, 5), (5, 32), (SIZE - 1, SIZE - 1)):  # black to its right and below it
        np.testing.assert_allclose(scrfd[0, :, y, x], -127.5 / 128)


def test_a_larger_image_is_shrunk_into_the_corner() -> None:
    image = np.full((960, 1280, 3), 200, np.uint8)
    tensor, ratio = letterbox(image, detector_spec("yunet"))
    assert list(ratio) == [2.0, 2.0]
    assert (tensor[0, :, :480] == 200).all() and not tensor[0, :, 480:].any()


# The marker detector: SCRFD's outputs, firing at a stride-8 anchor whose pixel is magenta and whose right
# neighbour is green. Only a letterbox at scale 1 keeps the two pixels side by side, so only 640 px tiles see it.
BOX_HALF, MARKER_POINTS = 4.0, np.array([[-1.5, -1.0], [1.5, -1.0], [0.0, 0.5], [-1.0, 2.0], [1.0, 2.0]])


def _marker_session(tmp_path: Path):  # type: ignore[no-untyped-def]
    cells = nm.detector_cells(8) ** 2
    initializers = [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in (
        ("starts", [0, 0, 0, 0]), ("ends", [1, 3, SIZE, SIZE]), ("starts_next", [0, 0, 0, 1]),
        ("ends_next", [1, 3, SIZE, SIZE + 1]), ("axes", [0, 1, 2, 3]), ("steps", [1, 1, 8, 8]),
        ("cells", [cells, 1]), ("anchors", [cells * 2, 1]))]
    initializers += [numpy_helper.from_array(np.array(v, dtype=np.float32).reshape(1, 3, 1, 1), n)
                     for n, v in (("magenta", [1, -2, 1]), ("green", [-1, 2, -1]))]
    initializers += [numpy_helper.from_array(np.float32(v), n) for n, v in (("threshold", 3.5), ("gain", 8.0))]
    nodes = [
        helper.make_node("Slice", ["input", "starts", "ends", "axes", "steps"], ["at_anchor"]),
        helper.make_node("Slice", ["input", "starts_next", "ends_next", "axes", "steps"], ["beside"]),
        helper.make_node("Conv", ["at_anchor", "magenta"], ["is_magenta"]),
        helper.make_node("Conv", ["beside", "green"], ["is_green"]),
        helper.make_node("Min", ["is_magenta", "is_green"], ["feature"]),
        helper.make_node("Sub", ["feature", "threshold"], ["centred"]),
        helper.make_node("Mul", ["centred", "gain"], ["logit"]),
        helper.make_node("Sigmoid", ["logit"], ["cell_score"]),
        helper.make_node("Reshape", ["cell_score", "cells"], ["per_cell"]),
        helper.make_node("Concat", ["per_cell", "per_cell"], ["two_anchors"], axis=1),
        helper.make_node("Reshape", ["two_anchors", "anchors"], ["score_8"]),
    ]
    outputs = nm.scrfd_outputs([])
    outputs[3][:] = BOX_HALF
    outputs[6][:] = MARKER_POINTS.reshape(-1)
    nodes += nm.constant_outputs("scrfd_2.5g", outputs)[1:]
    return _session(tmp_path, "scrfd_2.5g", nodes, outputs, initializers)


def test_small_faces_are_found_in_tiles_at_their_exact_place(tmp_path: Path, grace_hopper: np.ndarray,
                                                              astronaut: np.ndarray) -> None:
    canvas = np.full((1080, 1920, 3), 90, dtype=np.uint8)
    place(canvas, grace_hopper, GRACE_HOPPER_FACE, 300, (450, 400))
    place(canvas, astronaut, ASTRONAUT_FACE, 200, (1400, 600))
    markers = [(400, 200), (1000, 520), (1880, 1040)]  # on a photo, between tiles' edges, in the corner
    for x, y in markers:
        canvas[y, x], canvas[y, x + 1] = (255, 0, 255), (0, 255, 0)
    detector = NeuralFaceDetector(_marker_session(tmp_path), detector_spec("scrfd_2.5g"))
    assert len(detector.run(canvas)[2]) == 0  # the whole canvas, letterboxed, shows no marker
    found = sorted(detector.detections(canvas), key=lambda d: float(d.box[0]))
    assert len(found) == len(markers)
    for detection, (x, y) in zip(found, markers, strict=True):
        half = BOX_HALF * 8
        np.testing.assert_allclose(detection.box, [x - half, y - half, x + half, y + half], atol=1e-3)
        np.testing.assert_allclose(detection.points, np.array([x, y]) + MARKER_POINTS * 8, atol=1e-3)
        assert detection.score > 0.9
    faces = detector.detect(canvas)
    assert len(faces) == 3 and all(face.size == pytest.approx(2 * BOX_HALF * 8, abs=1e-3) for face in faces)


def test_options_override_the_score_threshold(tmp_path: Path, astronaut: np.ndarray) -> None:
    session = _constant_session(tmp_path, "retinaface_10g", nm.scrfd_outputs(PLANTS))
    strict = NeuralFaceDetector(session, detector_spec("retinaface_10g"), NeuralDetectorOptions(score=0.8))
    assert len(strict.detections(astronaut)) == 1

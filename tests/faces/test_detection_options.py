"""FaceFusion's detection options on the packaged photos: --face-detector-angles (the frame turned before detecting,
faces mapped back), --face-detector-margin (a black border, for faces cut by the frame's edge),
--face-landmarker-score (the face presence FaceMesh must report) and --face-tracker-score (the box overlap that
continues a track)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scenes import frame_loop, place, run_for
from slimfuse.cli.main import main
from slimfuse.faces.geometry import iou
from slimfuse.faces.search import turned_back
from slimfuse.samples import ASTRONAUT_FACE, GRACE_HOPPER_FACE


def _faces(source: Path, image: np.ndarray, **options: object) -> list[np.ndarray]:
    return [face.box for face in run_for(source, **options).faces(image)]


@pytest.mark.parametrize("turns", [1, 2, 3])
def test_points_of_a_turned_frame_map_back_to_the_same_pixels(turns: int) -> None:
    frame = np.zeros((6, 10), np.uint8)
    frame[1, 7] = 255
    turned = np.rot90(frame, turns)
    y, x = np.argwhere(turned == 255)[0]
    centre = turned_back(np.array([[x + 0.5, y + 0.5]], np.float32), turns, 10, 6)[0]
    assert centre.tolist() == [7.5, 1.5]


def test_an_upside_down_face_is_found_only_with_the_angles(astronaut_path: Path, grace_hopper: np.ndarray) -> None:
    upside_down = np.ascontiguousarray(np.rot90(grace_hopper, 2))
    height, width = grace_hopper.shape[:2]
    x0, y0, x1, y1 = GRACE_HOPPER_FACE
    expected = np.array([width - x1, height - y1, width - x0, height - y0], np.float32)
    assert _faces(astronaut_path, upside_down) == []
    for angles in ([0, 180], [0, 90, 180, 270]):
        found = _faces(astronaut_path, upside_down, face_detector_angles=angles)
        assert len(found) == 1 and float(iou(expected, found[0][None])[0]) > 0.6


def test_the_angles_turn_counter_clockwise_as_facefusion_does(tmp_path: Path, astronaut_path: Path,
                                                              grace_hopper: np.ndarray,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Grace Hopper turned a quarter counter-clockwise scores 0.76 at angle 0: under --face-detector-score 0.85 only
    the frame turned a further 270 degrees (upright again) finds her, at 0.95; the swap lands on her face."""
    turned = np.ascontiguousarray(np.rot90(grace_hopper, 1))
    target = tmp_path / "turned.png"
    Image.fromarray(turned).save(target)
    output = tmp_path / "out.png"

    def swap(*angles: str) -> int:
        return main(["swap", "-s", str(astronaut_path), "-t", str(target), "-o", str(output), "--quiet",
                     "--face-detector-score", "0.85", "--face-detector-angles", *angles])

    assert swap("0") == 9 and swap("0", "90") == 9 and swap("0", "180") == 9
    assert swap("0", "270") == 0
    changed = np.abs(np.asarray(Image.open(output)).astype(int) - turned).sum(axis=2) > 30
    ys, xs = np.nonzero(changed)
    x0, y0, x1, y1 = GRACE_HOPPER_FACE
    face = (y0, grace_hopper.shape[1] - x1, y1, grace_hopper.shape[1] - x0)  # x0 y0 x1 y1 once turned
    assert face[0] - 20 < np.median(xs) < face[2] + 20 and face[1] - 20 < np.median(ys) < face[3] + 20
    capsys.readouterr()


@pytest.mark.parametrize("left", [20, 50, 100])
def test_a_face_cut_by_the_left_edge_is_found_with_a_left_margin(astronaut_path: Path, grace_hopper_path: Path,
                                                                 astronaut: np.ndarray, left: int) -> None:
    """The astronaut cut 210 px from the left (her face's left third gone) is missed; with a margin on the left,
    the face is found where it is, its box reaching past the edge."""
    cut = 210
    image = np.ascontiguousarray(astronaut[:, cut:])
    x0, y0, x1, y1 = ASTRONAUT_FACE
    expected = np.array([x0 - cut, y0, x1 - cut, y1], np.float32)
    assert _faces(grace_hopper_path, image) == []
    assert _faces(grace_hopper_path, image, face_detector_margin=[left, 0, 0, 0]) == []  # the wrong side
    found = _faces(grace_hopper_path, image, face_detector_margin=[0, 0, 0, left])
    assert len(found) == 1 and float(iou(expected, found[0][None])[0]) > 0.7 and found[0][0] < 0


def test_the_landmarker_score_keeps_or_drops_what_facemesh_doubts(astronaut_path: Path, grace_hopper: np.ndarray,
                                                                  astronaut: np.ndarray) -> None:
    """Below Grace Hopper's face (her uniform) a loose detector (0.3) finds a 'face' at 0.46 that FaceMesh gives a
    presence under 0.001: dropped at the default 0.5, kept at 0 (FaceFusion's 'no landmarker check'); a real face
    (presence 1.0) is kept at 0.99, and nothing at 1."""
    uniform = np.ascontiguousarray(grace_hopper[380:])
    assert _faces(astronaut_path, uniform, face_detector_score=0.3) == []
    assert len(_faces(astronaut_path, uniform, face_detector_score=0.3, face_landmarker_score=0.0)) == 1
    assert len(_faces(astronaut_path, astronaut, face_landmarker_score=0.99)) == 1
    assert _faces(astronaut_path, astronaut, face_landmarker_score=1.0) == []


@pytest.mark.parametrize(("score", "same_track"), [(None, False), (0.1, True), (0.3, False), (0.25, False)])
def test_the_tracker_score_is_the_overlap_that_continues_a_track(astronaut_path: Path, grace_hopper: np.ndarray,
                                                                 score: float | None, same_track: bool) -> None:
    """A face that jumps two thirds of its width between two frames overlaps its last box by about 0.2: a new
    track at slimfuse's own 0.3, the same track at 0.1."""
    frames, boxes = [], []
    for centre in (300, 400):
        canvas = np.full((360, 720, 3), 90, np.uint8)
        boxes.append(np.array(place(canvas, grace_hopper, GRACE_HOPPER_FACE, 150, (centre, 180)), np.float32))
        frames.append(canvas)
    assert float(iou(boxes[0], boxes[1][None])[0]) == pytest.approx(0.2, abs=0.01)
    options = {} if score is None else {"face_tracker_score": score}
    loop = frame_loop(astronaut_path, face_detector_interval=1, **options)
    first = loop.tracker.update(frames[0], 0.0)[0].id
    second = loop.tracker.update(frames[1], 0.04)
    assert len(second) == 1 and (second[0].id == first) == same_track


def test_a_tracker_score_of_0_is_refused_with_what_to_use(tmp_path: Path, astronaut_path: Path,
                                                          grace_hopper_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(tmp_path / "o.png"),
                 "--face-tracker-score", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--face-detector-interval 1" in err[0]

"""The real-photo measures (bench/face_measures.py) on the packaged portraits, each shown to move when the thing it
measures is put into the photo: eyes closed by warping, a dark band painted on the forehead, a tinted cheek, drawn
glasses, a pasted patch with a hard seam."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from slimfuse.bench import face_measures as fm
from slimfuse.bench import quality
from slimfuse.bench.face_judge import FaceJudge


def only_face(judge: FaceJudge, image: np.ndarray) -> np.ndarray:
    [face] = judge.faces(image)
    return face.points


def close_eye(image: np.ndarray, points: np.ndarray, eye: int, amount: float = 0.7) -> np.ndarray:
    """The eye's lids brought together: rows near the eye's corner line sample from further out (by `amount` of
    the opening at the line, fading to nothing 2.5 openings away and outside the eye's width)."""
    p = points[list(fm.EYES[eye])]
    centre_y, centre_x = (p[0, 1] + p[3, 1]) / 2, (p[0, 0] + p[3, 0]) / 2
    opening = max(np.linalg.norm(p[1] - p[5]), np.linalg.norm(p[2] - p[4]))
    width = np.linalg.norm(p[0] - p[3])
    ys, xs = np.mgrid[0:image.shape[0], 0:image.shape[1]].astype(np.float32)
    d = ys - centre_y
    fade = np.clip(1 - np.abs(d) / (2.5 * opening), 0, 1) * np.clip(2 * (1 - np.abs(xs - centre_x) / (0.9 * width)), 0, 1)
    return cv2.remap(image, xs, (ys + np.sign(d) * amount * opening * fade).astype(np.float32), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REFLECT)


@pytest.fixture(scope="module")
def astronaut_2x(astronaut: np.ndarray) -> np.ndarray:
    """The astronaut at 2x: a 190 px face, the size of the group photos' faces."""
    return cv2.resize(astronaut, None, fx=2, fy=2, interpolation=cv2.INTER_CUBIC)


def test_eye_aspect_ratio_reads_open_and_warped_shut_eyes(judge: FaceJudge, astronaut_2x: np.ndarray) -> None:
    [face] = judge.faces(astronaut_2x)
    open_eyes = [fm.eye_aspect_ratio(face.points, eye) for eye in (0, 1)]
    assert min(open_eyes) > 0.3
    # a blink: both eyes (dlib's 68 points hold the two eyes together: one eye shut alone reads about 0.25)
    shut = close_eye(close_eye(astronaut_2x, face.points, 0), face.points, 1)
    closed = judge.points(shut, face.box)
    assert max(fm.eye_aspect_ratio(closed, eye) for eye in (0, 1)) < fm.CLOSED_EYE


def test_mouth_opening_tells_a_smile_with_teeth_from_closed_lips(judge: FaceJudge, astronaut: np.ndarray,
                                                                grace_hopper: np.ndarray) -> None:
    assert fm.mouth_opening(only_face(judge, astronaut)) > 0.05  # her teeth show between the lips
    assert fm.mouth_opening(only_face(judge, grace_hopper)) < 0.01


def test_yaw_follows_the_nose_between_the_jaw_ends_and_roll_the_eyes(judge: FaceJudge, astronaut: np.ndarray) -> None:
    points = only_face(judge, astronaut)
    assert abs(fm.yaw_degrees(points)) < 10  # a frontal portrait
    assert abs(fm.roll_degrees(points)) < 5
    angle = np.radians(20)
    tilt = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    tilted = points @ tilt.T
    assert fm.roll_degrees(tilted) == pytest.approx(fm.roll_degrees(points) + 20, abs=1e-6)
    assert fm.yaw_degrees(tilted) == pytest.approx(fm.yaw_degrees(points), abs=1e-6)  # a tilt is no turn
    for end, sign, far in ((16, 1, 1), (0, -1, 0)):
        turned = points.copy()
        turned[fm.NOSE_TIP] += 0.5 * (points[end] - points[fm.NOSE_TIP])  # the nose halfway to that end
        assert 20 < sign * fm.yaw_degrees(turned) < 60 and fm.far_cheek(turned) == far
        turned[fm.NOSE_TIP] = points[end] + 0.05 * (points[16 - end] - points[end])  # nearly at the end: a profile
        assert sign * fm.yaw_degrees(turned) > 60


def test_forehead_band_catches_a_dark_band_above_the_brows(judge: FaceJudge, grace_hopper: np.ndarray) -> None:
    points = only_face(judge, grace_hopper)
    band = fm.forehead_band(grace_hopper.shape[:2], points)
    brows = points[list(fm.BROWS)]
    height = fm.face_height(points)
    assert band.sum() > 0.15 * height * (brows[:, 0].max() - brows[:, 0].min())
    assert not band[int(points[fm.NOSE_TIP][1]):].any()  # all of it above the nose

    def painted(top: float, bottom: float) -> np.ndarray:
        out = grace_hopper.astype(np.int16)
        rows = slice(int(top), int(bottom))
        out[rows, int(brows[:, 0].min()):int(brows[:, 0].max())] -= 60
        return np.clip(out, 0, 255).astype(np.uint8)

    brow_y = brows[:, 1].min()
    fringe = painted(brow_y - 0.2 * height, brow_y - 0.1 * height)
    assert fm.mean_gray(fringe, band) - fm.mean_gray(grace_hopper, band) < -15
    on_the_mouth = painted(points[62][1] - 5, points[62][1] + 5)
    assert fm.mean_gray(on_the_mouth, band) == fm.mean_gray(grace_hopper, band)


def test_cheek_colour_sees_one_tinted_cheek(judge: FaceJudge, astronaut: np.ndarray) -> None:
    points = only_face(judge, astronaut)
    masks = [fm.cheek_mask(astronaut.shape[:2], points, cheek) for cheek in (0, 1)]
    assert all(m.sum() > 200 for m in masks) and not (masks[0] & masks[1]).any()
    tinted = astronaut.astype(np.int16)
    centre = points[list(fm.CHEEKS[1])].mean(axis=0)
    disc = np.zeros(astronaut.shape[:2], np.uint8)
    cv2.circle(disc, (int(centre[0]), int(centre[1])), int(0.2 * fm.face_height(points)), 1, -1)
    tinted[disc > 0] += np.array([-20, 10, -20], np.int16)  # greener
    tinted = np.clip(tinted, 0, 255).astype(np.uint8)
    changes = []
    for mask in masks:
        (ta, tb), (oa, ob) = fm.lab_ab(astronaut, mask), fm.lab_ab(tinted, mask)
        changes.append(max(abs(oa - ta), abs(ob - tb)))
    assert changes[0] == 0 and changes[1] > 6


def test_new_dark_frames_find_drawn_glasses(judge: FaceJudge, astronaut: np.ndarray) -> None:
    points = only_face(judge, astronaut)
    eyes = tuple(points[list(eye)].mean(axis=0) for eye in fm.EYES)
    box = (int(points[:, 0].min()), int(points[:, 1].min()), int(points[:, 0].max()), int(points[:, 1].max()))
    glasses, _ = quality.draw_glasses(astronaut, eyes, box)  # type: ignore[arg-type]
    zone = fm.frame_zone(astronaut.shape[:2], points, judge.points(glasses, judge.faces(astronaut)[0].box))
    assert fm.new_dark_share(glasses, astronaut, zone) > 0.05
    assert fm.new_dark_share(astronaut, astronaut, zone) == 0
    darker_everywhere = np.clip(astronaut.astype(np.int16) - 30, 0, 255).astype(np.uint8)  # shade, not frames
    assert fm.new_dark_share(darker_everywhere, astronaut, zone) < 0.001


def test_paste_edge_ratio_sees_a_hard_seam(judge: FaceJudge, astronaut_2x: np.ndarray) -> None:
    points = only_face(judge, astronaut_2x)
    middle = points[list(fm.JAW)].mean(axis=0)
    inside = fm.polygon_mask(astronaut_2x.shape[:2], middle + 0.85 * (points[list(fm.JAW)] - middle))

    def pasted(mask: np.ndarray) -> np.ndarray:
        out = astronaut_2x.astype(np.float32) + 25 * mask[..., None]
        return np.clip(np.rint(out), 0, 255).astype(np.uint8)

    hard = pasted(inside.astype(np.float32))
    feathered = pasted(cv2.GaussianBlur(inside.astype(np.float32), (0, 0), 0.04 * fm.face_height(points)))
    hard_ratios, feathered_ratios = fm.edge_ratios(hard, astronaut_2x, points), fm.edge_ratios(feathered,
                                                                                              astronaut_2x, points)
    assert hard_ratios.band > 1.3 and hard_ratios.outline > 1.3
    assert 1 / 1.1 <= feathered_ratios.band <= 1.1 and 1 / 1.1 <= feathered_ratios.outline <= 1.1
    # A face left alone has no paste edge.
    assert fm.edge_ratios(astronaut_2x, astronaut_2x, points) == fm.EdgeRatios(1.0, 1.0, 1.0)


def test_folds_inside_the_face_count_in_its_ring_not_on_its_outline(judge: FaceJudge,
                                                                       astronaut_2x: np.ndarray) -> None:
    """Stripes (a wrinkled source's folds) from 0.03 face heights inside the pasted region: the band and its ring
    read them as an edge, the outline, where a seam would show, does not."""
    points = only_face(judge, astronaut_2x)
    middle = points[list(fm.JAW)].mean(axis=0)
    inside = fm.polygon_mask(astronaut_2x.shape[:2], middle + 0.85 * (points[list(fm.JAW)] - middle))
    height = fm.face_height(points)
    feathered = astronaut_2x.astype(np.float32) + 25 * cv2.GaussianBlur(inside.astype(np.float32), (0, 0),
                                                                        0.04 * height)[..., None]
    region = fm.pasted_region(np.clip(np.rint(feathered), 0, 255).astype(np.uint8), astronaut_2x, points)
    deep = cv2.distanceTransform(region.astype(np.uint8), cv2.DIST_L2, 5) > 0.03 * height
    stripes = 20 * np.sin(np.arange(astronaut_2x.shape[1], dtype=np.float32) * (2 * np.pi / 6))
    folded = np.clip(np.rint(feathered + (deep * stripes[None, :])[..., None]), 0, 255).astype(np.uint8)
    ratios = fm.edge_ratios(folded, astronaut_2x, points)
    assert ratios.band > 1.3 and ratios.ring > 1.5
    assert 1 / 1.1 <= ratios.outline <= 1.1

"""Detection, landmarks and identity on real photos, with the real converted models."""
from __future__ import annotations

import numpy as np
import pytest

from scenes import ASTRONAUT_FACE, GRACE_HOPPER_FACE, group, rotated, small_face_on_4k
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.blazeface import DetectorOptions
from slimfuse.faces.geometry import iou
from slimfuse.faces.identity import SAME_PERSON_DISTANCE, IdentityModel, distance
from slimfuse.models.pool import ModelPool


def _matched(found: list, expected: list, threshold: float = 0.4) -> int:
    boxes = np.array([face.box for face in found]).reshape(-1, 4)
    return sum(bool(len(boxes)) and float(iou(np.array(box), boxes).max()) > threshold for box in expected)


@pytest.mark.parametrize("model", ["auto", "full", "short"])
def test_every_face_in_a_group_photo_is_found(pool: ModelPool, grace_hopper: np.ndarray, astronaut: np.ndarray,
                                              model: str) -> None:
    scene = group(grace_hopper, astronaut)
    faces = FaceAnalyser(pool, DetectorOptions(model=model)).faces(scene.image)  # type: ignore[arg-type]
    assert _matched(faces, scene.faces) == 6
    assert len(faces) == 6


def test_small_face_on_a_4k_canvas(pool: ModelPool, grace_hopper: np.ndarray) -> None:
    scene = small_face_on_4k(grace_hopper, GRACE_HOPPER_FACE)
    faces = FaceAnalyser(pool).faces(scene.image)
    assert len(faces) == 1 and _matched(faces, scene.faces) == 1


def test_a_photo_without_faces_gives_none(pool: ModelPool, grace_hopper: np.ndarray) -> None:
    flag = np.ascontiguousarray(grace_hopper[:300, :140])
    assert FaceAnalyser(pool).faces(flag) == []


@pytest.mark.parametrize("degrees", [-30, -15, 15, 30])
def test_landmarks_follow_a_rolled_head(pool: ModelPool, astronaut: np.ndarray, degrees: float) -> None:
    analyser = FaceAnalyser(pool)
    upright = analyser.faces(astronaut)[0].landmarks
    turned = analyser.faces(rotated(astronaut, degrees))[0].landmarks
    height, width = astronaut.shape[:2]
    angle = np.deg2rad(degrees)
    # cv2's positive angle turns the picture counter-clockwise on screen.
    rotation = np.array([[np.cos(angle), np.sin(angle)], [-np.sin(angle), np.cos(angle)]])
    centre = np.array([width / 2, height / 2])
    expected = (upright[:, :2] - centre) @ rotation.T + centre
    assert np.abs(turned[:, :2] - expected).mean() < 1.5  # pixels, on a face about 100 px wide


def test_mesh_lies_on_the_face(pool: ModelPool, grace_hopper: np.ndarray, astronaut: np.ndarray) -> None:
    for photo, (x0, y0, x1, y1) in ((grace_hopper, GRACE_HOPPER_FACE), (astronaut, ASTRONAUT_FACE)):
        points = FaceAnalyser(pool).faces(photo)[0].landmarks
        assert points.shape == (468, 3)
        inside = (points[:, 0] > x0 - 10) & (points[:, 0] < x1 + 10) & (points[:, 1] > y0 - 25) & (points[:, 1] < y1 + 10)
        assert inside.mean() > 0.98


def test_identity_tells_people_apart(pool: ModelPool, grace_hopper: np.ndarray, astronaut: np.ndarray) -> None:
    analyser, identity = FaceAnalyser(pool), IdentityModel(pool)
    hopper = identity.descriptor(grace_hopper, analyser.faces(grace_hopper)[0])
    collins = identity.descriptor(astronaut, analyser.faces(astronaut)[0])
    mirrored = np.ascontiguousarray(grace_hopper[:, ::-1])
    hopper_mirrored = identity.descriptor(mirrored, analyser.faces(mirrored)[0])
    turned = rotated(grace_hopper, 25)
    hopper_turned = identity.descriptor(turned, analyser.faces(turned)[0])
    assert distance(hopper, collins) > SAME_PERSON_DISTANCE
    assert distance(hopper, hopper_mirrored) < 0.3
    assert distance(hopper, hopper_turned) < 0.3

"""Alignment: the templates against the published figures, the similarity fit, the warp, and real faces."""
from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from slimfuse.faces.align import (
    LEFT_EYE_RING,
    RIGHT_EYE_RING,
    TEMPLATES,
    align_matrix,
    five_points,
    invert,
    similarity,
    template_points,
    transform_points,
    warp_face,
    warp_to_crop,
)
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.models.pool import ModelPool

# The table of ../shared/facts/models.md (normalised to the crop), and FaceFusion's, typed in again on purpose.
FACTS = {
    "arcface_112_v1": [(0.35473214, 0.45658929), (0.64526786, 0.45658929), (0.5, 0.61154464),
                       (0.37913393, 0.776875), (0.62086607, 0.776875)],
    "arcface_112_v2": [(0.34191607, 0.46157411), (0.65653393, 0.45983393), (0.500225, 0.64050536),
                       (0.37097589, 0.82469196), (0.63151696, 0.82325089)],
    "arcface_128": [(0.36167656, 0.40387734), (0.63696719, 0.40235469), (0.50019687, 0.56044219),
                    (0.38710391, 0.72160547), (0.61507734, 0.72034453)],
    "ffhq_512": [(0.37691676, 0.46864664), (0.62285697, 0.46912813), (0.50123859, 0.61331904),
                 (0.39308822, 0.725411), (0.61150205, 0.72490465)],
    "mtcnn_512": [(0.36562865, 0.46733799), (0.63305391, 0.46585885), (0.50019127, 0.61942959),
                  (0.39032951, 0.77598822), (0.61178945, 0.77476328)],
    # FaceFusion 3.8.1's facefusion/face_helper.py (the deep swapper's and styleganex_age's templates).
    "dfl_whole_face": [(0.35342266, 0.39285716), (0.62797622, 0.39285716), (0.48660713, 0.5401786),
                       (0.38839287, 0.68750011), (0.59821427, 0.68750011)],
    "styleganex_384": [(0.42353745, 0.52289879), (0.57725008, 0.52319972), (0.50123859, 0.61331904),
                       (0.43364461, 0.68337652), (0.57015325, 0.68306005)],
}
CLASSIC_ARCFACE_112 = [(38.2946, 51.6963), (73.5318, 51.5014), (56.0252, 71.7366), (41.5493, 92.3655),
                       (70.7299, 92.2041)]


def test_templates_match_the_published_figures() -> None:
    assert set(TEMPLATES) == set(FACTS)
    for name, points in FACTS.items():
        np.testing.assert_allclose(TEMPLATES[name], points, atol=1e-8)
    np.testing.assert_allclose(template_points("arcface_112_v2", 112), CLASSIC_ARCFACE_112, atol=5e-4)


@pytest.mark.parametrize("seed", range(5))
def test_similarity_recovers_an_exact_similarity(seed: int) -> None:
    rng = np.random.default_rng(seed)
    angle, scale = rng.uniform(-math.pi, math.pi), rng.uniform(0.1, 5.0)
    truth = np.array([[scale * math.cos(angle), -scale * math.sin(angle), rng.uniform(-300, 300)],
                      [scale * math.sin(angle), scale * math.cos(angle), rng.uniform(-300, 300)]])
    points = rng.uniform(0, 1000, (5, 2))
    np.testing.assert_allclose(similarity(points, transform_points(truth, points)), truth, atol=1e-9)


def test_similarity_is_the_least_squares_fit() -> None:
    rng = np.random.default_rng(1)
    src = rng.uniform(0, 100, (5, 2))
    dst = src * 1.3 + 7 + rng.normal(0, 2.0, (5, 2))
    fit = similarity(src, dst)
    assert np.isclose(fit[0, 0], fit[1, 1]) and np.isclose(fit[0, 1], -fit[1, 0])  # 4 degrees of freedom
    best = np.sum((transform_points(fit, src) - dst) ** 2)
    for _ in range(200):  # no nearby similarity does better
        nudged = fit.copy()
        a, b = rng.normal(0, 1e-3, 2)
        nudged[:, :2] += np.array([[a, -b], [b, a]])
        nudged[:, 2] += rng.normal(0, 1e-2, 2)
        assert np.sum((transform_points(nudged, src) - dst) ** 2) >= best - 1e-9


def test_eye_rings_are_the_meshs(store) -> None:  # type: ignore[no-untyped-def]
    topology = MeshTopology.from_json(store.path("face_mesh_topology").read_text(encoding="utf-8"))
    assert set(RIGHT_EYE_RING) == set(topology.right_eye)
    assert set(LEFT_EYE_RING) == set(topology.left_eye)


@pytest.mark.parametrize("photo", ["grace_hopper", "astronaut"])
@pytest.mark.parametrize("template", sorted(FACTS))
def test_aligning_a_real_face_puts_its_eyes_where_the_template_says(pool: ModelPool, photo: str, template: str,
                                                                   request: pytest.FixtureRequest) -> None:
    image = request.getfixturevalue(photo)
    face = FaceAnalyser(pool).faces(image)[0]
    points = five_points(face.landmarks)
    assert points[0, 0] < points[1, 0] and points[3, 0] < points[4, 0]  # template order: image left first
    size = 112
    crop, matrix = warp_face(image, points, template, size)
    assert crop.shape == (size, size, 3)
    eyes = transform_points(matrix, points[:2])
    assert np.abs(eyes - template_points(template, size)[:2]).max() < 4.0  # pixels of a 112 px crop
    # The inverse takes crop points back to the frame (paste-back goes through it).
    inverse = invert(matrix)
    np.testing.assert_allclose(transform_points(inverse, transform_points(matrix, points)), points, atol=1e-6)


def test_warp_to_crop_matches_a_plain_warp_and_averages_when_shrinking(grace_hopper: np.ndarray) -> None:
    points = np.array([[220.0, 220], [320, 220], [270, 270], [230, 320], [310, 320]])
    matrix = align_matrix(points, "ffhq_512", 512)  # enlarging: the same as warping the whole frame
    plain = cv2.warpAffine(grace_hopper, matrix, (512, 512), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    assert np.abs(warp_to_crop(grace_hopper, matrix, 512).astype(int) - plain).max() <= 1
    small = align_matrix(points, "arcface_128", 48)  # shrinking by more than 2: area-averaged, no aliasing
    averaged = warp_to_crop(grace_hopper, small, 48).astype(float)
    blurred = cv2.warpAffine(cv2.GaussianBlur(grace_hopper, (0, 0), 1.5), small, (48, 48), flags=cv2.INTER_LINEAR)
    assert np.abs(averaged - blurred).mean() < 6

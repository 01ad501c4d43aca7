"""The mesh swapper's triangle rasteriser: coverage by pixel centres, draw order, orientation, clipping."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors.raster import triangle_labels


def _centres_inside(tri: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Reference: each pixel centre tested against the triangle with a point-in-polygon test (edges included)."""
    contour = tri.astype(np.float32).reshape(-1, 1, 2)
    h, w = shape
    return np.array([[cv2.pointPolygonTest(contour, (float(x), float(y)), False) >= 0 for x in range(w)]
                     for y in range(h)])


def test_two_triangles_sharing_an_edge_cover_their_square_without_gaps() -> None:
    square = np.array([[[2, 2], [12, 2], [12, 9]], [[2, 2], [12, 9], [2, 9]]], dtype=np.float64)
    ids = triangle_labels(square, np.array([1, 2]), (12, 16))
    expected = np.zeros((12, 16), bool)
    expected[2:10, 2:13] = True
    assert np.array_equal(ids > 0, expected)
    assert set(np.unique(ids[expected])) == {1, 2}


def test_coverage_is_the_pixel_centres_inside_either_way_round_and_clipped_to_the_image() -> None:
    rng = np.random.default_rng(7)
    shape = (40, 50)
    for _ in range(20):
        tri = rng.uniform(-10, 60, size=(3, 2))
        expected = _centres_inside(tri, shape)
        assert np.array_equal(triangle_labels(tri[None], np.array([5]), shape) > 0, expected)
        assert np.array_equal(triangle_labels(tri[None, ::-1], np.array([5]), shape) > 0, expected)


def test_the_last_triangle_drawn_wins_where_they_overlap() -> None:
    big = [[0, 0], [20, 0], [0, 20]]
    small = [[2, 2], [8, 2], [2, 8]]
    ids = triangle_labels(np.array([big, small], dtype=np.float64), np.array([7, 9]), (24, 24))
    assert ids[3, 3] == 9 and ids[15, 2] == 7 and ids[20, 20] == 0
    ids = triangle_labels(np.array([small, big], dtype=np.float64), np.array([9, 7]), (24, 24))
    assert ids[3, 3] == 7


def test_a_sliver_between_pixel_rows_covers_nothing() -> None:
    sliver = np.array([[[0, 0.2], [10, 0.3], [5, 0.6]]])
    assert not triangle_labels(sliver, np.array([1]), (4, 12)).any()
    assert not triangle_labels(np.zeros((0, 3, 2)), np.zeros(0, int), (4, 12)).any()

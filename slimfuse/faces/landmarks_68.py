"""The face's 68 points in the iBUG-68 layout (jaw 0-16, brows 17-26, nose 27-35, eyes 36-47, mouth 48-67), read
off the 468-point FaceMesh, and the point sets of the area mask's parts (`--face-mask-areas`).

Tools that speak of 68 points (FaceFusion's area mask, its 68-point landmarker) get them here from the mesh: each
iBUG point is the FaceMesh vertex at the same place on the face (the jaw line along the mesh's face oval, the brows'
upper edges, the nose's bridge and base, the eyes' and lips' contours).
"""
from __future__ import annotations

from types import MappingProxyType

import numpy as np

MESH_TO_68: tuple[int, ...] = (
    162, 234, 93, 58, 172, 136, 149, 148, 152, 377, 378, 365, 397, 288, 323, 454, 389,  # jaw, image left to right
    71, 63, 105, 66, 107, 336, 296, 334, 293, 301,  # brows
    168, 197, 5, 1, 75, 97, 2, 326, 305,  # nose: bridge down to the tip (five_points' nose), the base left to right
    33, 160, 158, 133, 153, 144, 362, 385, 387, 263, 373, 380,  # eyes
    61, 39, 37, 0, 267, 269, 291, 405, 314, 17, 84, 181, 78, 82, 13, 312, 308, 317, 14, 87)  # lips: outer, inner
"""The FaceMesh vertex of each iBUG-68 point."""

AREA_POINTS = MappingProxyType({
    "upper-face": (0, 1, 2, 31, 32, 33, 34, 35, 14, 15, 16, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17),
    "lower-face": (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 35, 34, 33, 32, 31),
    "mouth": tuple(range(48, 68)),
})
"""`--face-mask-areas`: each part's iBUG-68 points, whose convex hull is the part (as FaceFusion 3.8.1 draws them:
the upper face from the jaw's top down to the nose's base and up over the brows, the lower face from the nose's
base down the jaw, the mouth the lips' contours)."""


def landmarks_68(mesh: np.ndarray) -> np.ndarray:
    """(68, 2) float64 points from (468, >=2) FaceMesh landmarks, in the same pixels."""
    points = np.asarray(mesh, dtype=np.float64)
    if points.ndim != 2 or points.shape[0] <= max(MESH_TO_68) or points.shape[1] < 2:
        raise ValueError(f"expected (468, 2 or 3) FaceMesh landmarks, got an array of shape {points.shape}")
    return points[list(MESH_TO_68), :2].copy()

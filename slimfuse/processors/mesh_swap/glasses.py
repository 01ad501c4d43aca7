"""Glasses: where they sit on a face, and their rims: lines much darker than their surroundings, thin, and long enough
not to be creases, wrinkles or lashes. The target's stay in front of the swapped face (`keep_occluders`); where the
source's dark frames are is found with its hair (source_skin.py)."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors import color as color_ops
from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_swap.mesh import SwapMesh
from slimfuse.processors.mesh_swap.tuning import MeshTuning

_SUBPIXEL_BITS = 4  # the eye rings are filled with this many bits of sub-pixel precision
_FRAME_LINES = ((133, 362), (33, 234), (263, 454), (33, 133), (263, 362))
"""Vertex pairs a frame runs between: the bridge (inner eye corners), each temple arm (outer eye corner to the face's
side) and each eye's width."""


def glasses_zone(vertices: np.ndarray, mesh: SwapMesh, size: float, shape: tuple[int, int], reach: float,
                 tuning: MeshTuning) -> np.ndarray:
    """Where glasses sit: around both eyes, over the bridge of the nose and along the temples to the face's sides,
    grown by `reach` (of the face `size`), soft-edged (float32)."""
    zone = np.zeros(shape, np.uint8)
    subpixel_scale = 1 << _SUBPIXEL_BITS
    for name in ("left_eye", "right_eye"):
        ring = np.round(mesh.ring_points(vertices, name) * subpixel_scale).astype(np.int32)
        cv2.fillPoly(zone, [ring], 255, cv2.LINE_8, _SUBPIXEL_BITS)
    thickness = max(2, int(round(0.07 * size)))
    for start, end in _FRAME_LINES:
        start_pixel, end_pixel = np.round(vertices[start, :2]).astype(int), np.round(vertices[end, :2]).astype(int)
        cv2.line(zone, (int(start_pixel[0]), int(start_pixel[1])), (int(end_pixel[0]), int(end_pixel[1])), 255, thickness)
    zone = dilated(zone, max(1, int(round(reach * size))))
    return mask_ops.eroded_feather(zone, 0.0, max(1.0, tuning.hole_feather * size * 1.5))


def darkness(image: np.ndarray, size: float, tuning: MeshTuning) -> np.ndarray:
    """How much darker than its surroundings each pixel is, across lines up to `occluder_width` wide, as a share of
    the surroundings' brightness (a rim is nearly black on skin; a crease only a little darker)."""
    luma = color_ops.luma(image)
    dark = mask_ops.dark_lines(luma, tuning.occluder_width * size)
    return dark / (luma + dark + 1.0)


def rims(darkness_map: np.ndarray, size: float, zone: np.ndarray, tuning: MeshTuning) -> np.ndarray:
    """Rim-like lines in `zone` (bool): `darkness_map` above `occluder_darkness` in a component spanning at least
    `occluder_length` of the face, so creases, wrinkles and lashes do not count."""
    lines = (darkness_map > tuning.occluder_darkness) & zone
    count, labels, stats, _ = cv2.connectedComponentsWithStats(lines.astype(np.uint8), connectivity=8)
    long = np.zeros(count, bool)
    extent = np.maximum(stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT])
    long[1:] = extent >= tuning.occluder_length * size
    return long[labels]


def occluders(target: np.ndarray, warped: np.ndarray, vertices: np.ndarray, mesh: SwapMesh, size: float,
              tuning: MeshTuning) -> np.ndarray:
    """Where the target shows something in front of its face (glasses rims): rim-like lines in its glasses zone,
    much darker than anything the `warped` source has close by. Soft-edged, float32."""
    shape = target.shape[:2]
    zone = glasses_zone(vertices, mesh, size, shape, tuning.rims_reach, tuning) > 0.5
    in_source = dilated(darkness(warped, size, tuning), max(1, int(round(0.01 * size))))
    lines = rims(darkness(target, size, tuning) - 0.5 * in_source, size, zone, tuning)
    if not lines.any():
        return np.zeros(shape, np.float32)
    # The rims' soft edges too, and little of the skin beside them.
    in_front = dilated(lines.astype(np.uint8) * 255, max(1, int(round(0.005 * size))))
    return mask_ops.eroded_feather(in_front, 0.0, max(1.0, 0.005 * size))


def dilated(image: np.ndarray, radius: int) -> np.ndarray:
    """`image` dilated by a disc of `radius` pixels."""
    return cv2.dilate(image, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1)))

"""Visibility: which triangle each pixel of the target's region shows (back-facing triangles first, then front-facing
ones from far to near, so nearer triangles win where the face folds over itself), and how far the source's texture of
each can be trusted (a triangle the source sees much more obliquely than the target does is stretched, and fades out;
one facing away in the target is not part of the mask, so the target's pixels stay)."""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_swap.mesh import doubled_areas
from slimfuse.processors.raster import triangle_labels

DEGENERATE_AREA = 1e-2  # a triangle with less than this (twice its area, in pixels) is not drawn


@dataclass(frozen=True, eq=False)
class VisibleMesh:
    """The target mesh as its region shows it. areas: (T,) twice each triangle's signed area (> 0: facing the camera);
    drawable: (T,) not degenerate; facing: (T,) facing the camera; triangle_ids: int32 image of the region, 0 where
    no triangle is, i + 1 where triangle i is the one seen."""

    areas: np.ndarray
    drawable: np.ndarray
    facing: np.ndarray
    triangle_ids: np.ndarray

    @property
    def facing_away(self) -> float:
        """The share of the mesh's (projected) area in triangles facing away from the camera."""
        total = float(np.abs(self.areas).sum())
        return float(-self.areas[self.areas < 0].sum()) / total if total > 0 else 0.0


def visible_mesh(triangles: np.ndarray, vertices: np.ndarray, shape: tuple[int, int]) -> VisibleMesh:
    """`triangles` of the mesh with `vertices` (in the region's pixels) seen in a region of `shape`."""
    areas = doubled_areas(vertices[triangles])
    drawable = np.abs(areas) > DEGENERATE_AREA
    facing = areas > DEGENERATE_AREA
    depth = vertices[triangles, 2].mean(axis=1)
    behind = np.nonzero(drawable & ~facing)[0]
    in_front = np.nonzero(facing)[0]
    in_front = in_front[np.argsort(-depth[in_front], kind="stable")]  # far (large z) to near
    order = np.concatenate([behind, in_front])
    triangle_ids = triangle_labels(vertices[triangles[order], :2], order + 1, shape)
    return VisibleMesh(areas=areas, drawable=drawable, facing=facing, triangle_ids=triangle_ids)


def texture_trust(visible: VisibleMesh, source_areas: np.ndarray, area_ratio: float, size: float,
                  max_stretch: float) -> np.ndarray:
    """Texture reliability per pixel: where the source shows a triangle much smaller than the target needs it (seen
    obliquely, or folded away: negative area), its texture is smeared; such regions fade out from `max_stretch` times
    the face's own magnification `area_ratio` on. The map is blurred so that a few tiny folded triangles (under the
    nose, inside the lips) leave no pinholes."""
    stretch = np.abs(visible.areas) / np.maximum(source_areas, 1e-6) / area_ratio
    fade = mask_ops.smoothstep(np.log2(np.maximum(stretch, 1e-6) / max_stretch))
    trust = np.concatenate([[1.0], np.where(source_areas > 0, 1.0 - fade, 0.0)]).astype(np.float32)
    trust_image = np.take(trust, visible.triangle_ids)
    if float(trust_image.min()) < 1.0:  # lone small folds vanish
        trust_image = mask_ops.smoothstep(2.0 * _smooth(trust_image, 0.025 * size) - 0.5)
    return trust_image


def facing_coverage(visible: VisibleMesh, size: float) -> np.ndarray:
    """uint8 (255 = covered) where a triangle facing the camera is seen, pinholes and slivers closed."""
    facing_flags = np.concatenate([[0], visible.facing]).astype(np.uint8) * 255
    return mask_ops.close_small_holes(np.take(facing_flags, visible.triangle_ids), max(1, int(round(0.01 * size))))


def _smooth(image: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of a smooth float map, done at a reduced size when sigma is large (same result to
    within a few thousandths, much cheaper)."""
    height, width = image.shape[:2]
    factor = max(1, int(sigma // 3))
    if factor == 1:
        return cv2.GaussianBlur(image, (0, 0), max(sigma, 0.5))
    small = cv2.resize(image, (max(1, width // factor), max(1, height // factor)), interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(small, (0, 0), sigma / factor)
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR)

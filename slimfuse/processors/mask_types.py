"""The face mask types a user selects (`--face-mask-types box mesh occlusion area region`, the run's MaskOptions) and
their combination.

Every mask is float32 H x W in [0, 1] of its crop's size, 1 where the processed face may show. The selected
masks combine by their minimum, so each one can only take area away (an occluding hand, the crop's edge).
- box: the crop's square, eroded and blurred (`--face-mask-blur`, `--face-mask-padding`, in FaceFusion's sense).
- mesh: the FaceMesh face oval (the caller gives landmarks in crop pixels, or its own mesh-based mask).
- occlusion: an XSeg occluder (slimfuse.processors.occlusion).
- area: the chosen parts of the face (`--face-mask-areas`), the hull of their 68 points (the caller gives the points
  in crop pixels).
- region: the chosen face-parser classes (slimfuse.processors.parsing).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import cv2
import numpy as np

from slimfuse.config import MaskArea, MaskOptions, Padding
from slimfuse.faces.landmarks_68 import AREA_POINTS
from slimfuse.processors.mesh_masks import soft_polygons

T = TypeVar("T")
EDGE_SIGMA = 5 / 256
"""The occlusion, area and region masks' edge softening, as a fraction of the crop's side: FaceFusion's 5 px on a
256 px crop (FaceFusion keeps 5 px at every crop size; here it grows with the crop, so a mask looks the same at any
pixel boost)."""


class CropMasker(Protocol):
    def masks(self, crops: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One float32 mask of each crop's size for a batch of H x W x 3 RGB uint8 crops."""
        ...


def box_mask(height: int, width: int, blur: float, padding: Padding = (0, 0, 0, 0)) -> np.ndarray:
    """The crop's square with a zero band at each side, blurred (`blurred_box`), its border lowered to exactly 0
    (`border_to_zero`)."""
    return border_to_zero(blurred_box(height, width, blur, padding))


def blurred_box(height: int, width: int, blur: float, padding: Padding = (0, 0, 0, 0)) -> np.ndarray:
    """FaceFusion's box mask: the crop's square with a zero band at each side, then Gaussian-blurred.

    The blur is `blur` x half the crop's width (sigma a quarter of that); each side's band is its padding
    percentage of the crop's side, but at least half the blur (and at least a pixel)."""
    amount = int(width * 0.5 * blur)
    least = max(amount // 2, 1)
    top, right, bottom, left = (max(least, int(side * percent / 100))
                                for side, percent in zip((height, width, height, width), padding, strict=True))
    mask = np.zeros((height, width), dtype=np.float32)
    mask[top:max(height - bottom, top), left:max(width - right, left)] = 1.0
    if amount <= 0:
        return mask
    return cv2.GaussianBlur(mask, (0, 0), amount * 0.25)


def border_to_zero(mask: np.ndarray) -> np.ndarray:
    """The mask lowered by its largest border value and stretched back to 1, so the border is exactly 0.

    FaceFusion's blurred box still holds about 5 % at the crop's border (the blur reaches past the zero band), a
    faint seam of the crop's square when pasted back; lowering it removes the seam and keeps the ramp's shape."""
    edge = float(max(mask[0].max(), mask[-1].max(), mask[:, 0].max(), mask[:, -1].max()))
    if edge >= 1.0 or edge <= 0.0:
        return mask
    return np.clip((mask - np.float32(edge)) / np.float32(1.0 - edge), 0.0, 1.0).astype(np.float32)


def mesh_mask(landmarks: np.ndarray, face_oval: Sequence[int], height: int, width: int, erode: float = 0.02,
              feather: float = 0.06) -> np.ndarray:
    """The face oval of a 468-point mesh (landmarks in crop pixels), pulled in by `erode` and feathered over
    `feather`, both fractions of the oval's larger extent, so the mask edge stays on skin."""
    oval = np.asarray(landmarks, dtype=np.float64)[list(face_oval), :2]
    size = float(max(np.ptp(oval[:, 0]), np.ptp(oval[:, 1]), 1.0))
    return soft_polygons((height, width), [oval], -erode * size, max(feather * size, 1.0))


def area_mask(points_68: np.ndarray, height: int, width: int, areas: Sequence[MaskArea],
              sigma: float) -> np.ndarray:
    """The convex hull of the chosen areas' iBUG-68 points (in crop pixels), its edge softened by `sigma`
    (`soft_edge`); all 0 when no area is chosen.

    The hull's corners are the points cut to whole pixels (toward zero), as FaceFusion draws them: rounding them
    instead moves edges by up to a pixel, up to 55 levels apart on the softened ramp of a 256 px crop."""
    chosen = [index for area in dict.fromkeys(areas) for index in AREA_POINTS[area]]
    mask = np.zeros((height, width), dtype=np.float32)
    if chosen:
        corners = np.asarray(points_68, dtype=np.float64)[chosen, :2].astype(np.int32)
        cv2.fillConvexPoly(mask, cv2.convexHull(corners), 1.0)
    return soft_edge(mask, sigma)


def soft_edge(mask: np.ndarray, sigma: float) -> np.ndarray:
    """Blur and keep the upper half, stretched to [0, 1]: the mask's edge moves inward by about `sigma` and
    becomes a soft ramp, so a model's ragged boundary does not show in the paste. sigma 0 leaves it alone."""
    mask = np.clip(np.asarray(mask, dtype=np.float32), 0.0, 1.0)
    if sigma <= 0:
        return mask
    blurred = cv2.GaussianBlur(mask, (0, 0), sigma)
    return ((np.clip(blurred, 0.5, 1.0) - 0.5) * 2.0).astype(np.float32)


def combine(masks: Sequence[np.ndarray]) -> np.ndarray:
    """The minimum of the masks: a pixel shows only where every mask lets it."""
    if not masks:
        raise ValueError("no masks to combine")
    return np.clip(np.minimum.reduce([np.asarray(m, dtype=np.float32) for m in masks]), 0.0, 1.0)


def crop_masks(crops: Sequence[np.ndarray], options: MaskOptions, occluder: CropMasker | None = None,
               parser: CropMasker | None = None, mesh: Sequence[np.ndarray] | None = None,
               points_68: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """One combined mask per crop of a batch, from the selected mask types (all ones when none is selected).

    mesh: each crop's mesh-based mask (see `mesh_mask`), needed when "mesh" is selected; points_68: each crop's
    iBUG-68 points in crop pixels, needed when "area" is selected."""
    per_type: list[list[np.ndarray]] = []
    for name in dict.fromkeys(options.face_mask_types):  # each type once, in the order given
        if name == "box":
            per_type.append([box_mask(c.shape[0], c.shape[1], options.face_mask_blur, options.face_mask_padding)
                             for c in crops])
        elif name == "mesh":
            per_type.append(list(_required(mesh, name)))
        elif name == "occlusion":
            per_type.append(_required(occluder, name).masks(crops))
        elif name == "area":
            per_type.append([area_mask(points, *c.shape[:2], options.face_mask_areas, EDGE_SIGMA * max(c.shape[:2]))
                             for points, c in zip(_required(points_68, name), crops, strict=True)])
        else:
            per_type.append(_required(parser, name).masks(crops))
    if not per_type:
        return [np.ones(c.shape[:2], dtype=np.float32) for c in crops]
    for masks in per_type:
        if len(masks) != len(crops) or any(m.shape != c.shape[:2] for m, c in zip(masks, crops, strict=False)):
            raise ValueError("every mask must have its crop's height and width")
    return [combine(masks) for masks in zip(*per_type, strict=True)]


def _required(value: T | None, name: str) -> T:
    if value is None:
        raise ValueError(f"the {name} face mask was selected but its model or mesh was not given")
    return value

"""The face mask types a user selects (`--face-mask-types box mesh occlusion region`) and their combination.

Every mask is float32 H x W in [0, 1] of its crop's size, 1 where the processed face may show. The selected
masks combine by their minimum, so each one can only take area away (an occluding hand, the crop's edge).
- box: the crop's square, eroded and blurred (`--face-mask-blur`, `--face-mask-padding`, in FaceFusion's sense).
- mesh: the FaceMesh face oval (the caller gives landmarks in crop pixels, or its own mesh-based mask).
- occlusion: an XSeg occluder (slimfuse.processors.occlusion).
- region: the chosen face-parser classes (slimfuse.processors.parsing).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

import cv2
import numpy as np

from slimfuse.processors.mesh_masks import soft_polygons

T = TypeVar("T")

MaskType = Literal["box", "mesh", "occlusion", "region"]
MASK_TYPES: tuple[MaskType, ...] = ("box", "mesh", "occlusion", "region")

Padding = tuple[int, int, int, int]
"""Top, right, bottom, left, in percent of the crop's side."""


@dataclass(frozen=True)
class MaskOptions:
    """The run's --face-mask-types, --face-mask-blur and --face-mask-padding (their defaults live in config.py)."""

    types: tuple[MaskType, ...]
    blur: float
    """0..1: the box mask's edge blur, as a fraction of half the crop's width."""
    padding: Padding = (0, 0, 0, 0)
    """Top, right, bottom, left percent; no padding unless one is asked for."""

    def __post_init__(self) -> None:
        unknown = [name for name in self.types if name not in MASK_TYPES]
        if unknown:
            raise ValueError(f"unknown face mask type {', '.join(unknown)}; known: {', '.join(MASK_TYPES)}")
        if not 0.0 <= self.blur <= 1.0:
            raise ValueError(f"face mask blur must lie between 0 and 1, got {self.blur}")
        if len(self.padding) != 4 or any(not 0 <= side <= 100 for side in self.padding):
            raise ValueError(f"face mask padding takes four percentages 0-100, got {self.padding}")


class CropMasker(Protocol):
    def masks(self, crops: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One float32 mask of each crop's size for a batch of H x W x 3 RGB uint8 crops."""
        ...


def padding_from(values: Sequence[int]) -> Padding:
    """1 to 4 values as in CSS (and FaceFusion): all sides; vertical horizontal; top horizontal bottom; or
    top right bottom left."""
    v = [int(value) for value in values]
    if len(v) == 1:
        return v[0], v[0], v[0], v[0]
    if len(v) == 2:
        return v[0], v[1], v[0], v[1]
    if len(v) == 3:
        return v[0], v[1], v[2], v[1]
    if len(v) == 4:
        return v[0], v[1], v[2], v[3]
    raise ValueError(f"face mask padding takes 1 to 4 values, got {len(v)}")


def box_mask(height: int, width: int, blur: float, padding: Padding = (0, 0, 0, 0)) -> np.ndarray:
    """The crop's square with a zero band at each side, then Gaussian-blurred.

    As in FaceFusion: the blur is `blur` x half the crop's width (sigma a quarter of that); each side's band is
    its padding percentage of the crop's side, but at least half the blur. FaceFusion's blurred mask still
    holds about 5 % at the crop's border, a faint seam when pasted back; here the blurred mask is lowered by its
    largest border value and stretched back to 1, so the border is exactly 0."""
    amount = int(width * 0.5 * blur)
    least = max(amount // 2, 1)
    top, right, bottom, left = (max(least, int(side * percent / 100))
                                for side, percent in zip((height, width, height, width), padding, strict=True))
    mask = np.zeros((height, width), dtype=np.float32)
    mask[top:max(height - bottom, top), left:max(width - right, left)] = 1.0
    if amount <= 0:
        return mask
    mask = cv2.GaussianBlur(mask, (0, 0), amount * 0.25)
    edge = float(max(mask[0].max(), mask[-1].max(), mask[:, 0].max(), mask[:, -1].max()))
    if edge >= 1.0:
        return mask
    return np.clip((mask - np.float32(edge)) / np.float32(1.0 - edge), 0.0, 1.0).astype(np.float32)


def mesh_mask(landmarks: np.ndarray, face_oval: Sequence[int], height: int, width: int, erode: float = 0.02,
              feather: float = 0.06) -> np.ndarray:
    """The face oval of a 468-point mesh (landmarks in crop pixels), pulled in by `erode` and feathered over
    `feather`, both fractions of the oval's larger extent, so the mask edge stays on skin."""
    oval = np.asarray(landmarks, dtype=np.float64)[list(face_oval), :2]
    size = float(max(np.ptp(oval[:, 0]), np.ptp(oval[:, 1]), 1.0))
    return soft_polygons((height, width), [oval], -erode * size, max(feather * size, 1.0))


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
               parser: CropMasker | None = None, mesh: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """One combined mask per crop of a batch, from the selected mask types (all ones when none is selected).

    mesh: each crop's mesh-based mask (see `mesh_mask`), needed when "mesh" is selected."""
    per_type: list[list[np.ndarray]] = []
    for name in dict.fromkeys(options.types):  # each type once, in the order given
        if name == "box":
            per_type.append([box_mask(c.shape[0], c.shape[1], options.blur, options.padding) for c in crops])
        elif name == "mesh":
            per_type.append(list(_required(mesh, name)))
        elif name == "occlusion":
            per_type.append(_required(occluder, name).masks(crops))
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

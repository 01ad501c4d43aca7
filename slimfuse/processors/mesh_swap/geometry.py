"""Geometry: the face's region of the crop, and where each of its pixels comes from: per-triangle affine maps from
target pixels to the source texture (and to the shape transfer's shift), and the warp through them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

NO_TRIANGLE = -1e4  # where a pixel lies on no triangle, its source position: far outside any image
EXACT_REMAP_CHANNELS = (4, 3, 1)  # OpenCV's remap interpolates these channel counts exactly; 2 and more than 4 go
# through tables that snap the points to 1/32 px


@dataclass(frozen=True, eq=False)
class Region:
    """A rectangle of the crop, columns `left` to `right` and rows `top` to `bottom` (exclusive), and the target
    mesh's vertices in its pixels."""

    left: int
    top: int
    right: int
    bottom: int
    vertices: np.ndarray

    @property
    def box(self) -> tuple[int, int, int, int]:
        return self.left, self.top, self.right, self.bottom

    @property
    def origin(self) -> tuple[int, int]:
        return self.left, self.top

    @property
    def shape(self) -> tuple[int, int]:
        return self.bottom - self.top, self.right - self.left

    def of(self, image: np.ndarray) -> np.ndarray:
        """The region's part of a crop-sized `image` (a view)."""
        return image[self.top:self.bottom, self.left:self.right]

    def around(self, mask: np.ndarray, margin: int) -> Region | None:
        """The part of this region where `mask` (of its shape) is true, `margin` pixels wider; None if it is nowhere."""
        left, top, width, height = cv2.boundingRect(mask.astype(np.uint8))
        if width == 0 or height == 0:
            return None
        rows, columns = self.shape
        left, top, right, bottom = (max(left - margin, 0), max(top - margin, 0),
                                    min(left + width + margin, columns), min(top + height + margin, rows))
        vertices = self.vertices.copy()
        vertices[:, 0] -= left
        vertices[:, 1] -= top
        return Region(self.left + left, self.top + top, self.left + right, self.top + bottom, vertices)

    def within(self, outer: Region) -> tuple[slice, slice]:
        """Where this region lies in an `outer` region's images (rows, columns)."""
        return (slice(self.top - outer.top, self.bottom - outer.top),
                slice(self.left - outer.left, self.right - outer.left))


def face_region(landmarks: np.ndarray, vertices: np.ndarray, shape: tuple[int, int]) -> Region | None:
    """The landmarks' bounding box in a crop of `shape` (2 px wider each way), with `vertices` in its pixels; None if
    less than 4 px of it lie in the crop."""
    height, width = shape
    low = np.floor(landmarks[:, :2].min(0)).astype(int) - 2
    high = np.ceil(landmarks[:, :2].max(0)).astype(int) + 3
    left, top = max(int(low[0]), 0), max(int(low[1]), 0)
    right, bottom = min(int(high[0]), width), min(int(high[1]), height)
    if right - left < 4 or bottom - top < 4:
        return None
    local = vertices.copy()
    local[:, 0] -= left
    local[:, 1] -= top
    return Region(left, top, right, bottom, local)


def affine_tables(triangles: np.ndarray, vertices: np.ndarray, source_corners: np.ndarray, shift: np.ndarray | None,
                  drawable: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-triangle affine coefficients (row 0 = "no triangle"), each (T + 1, 6) float32 as
    (ax, bx, cx, ay, by, cy): a target pixel (x, y) maps to (ax x + bx y + cx, ay x + by y + cy).
    The first table maps target pixels to source pixels (source_corners: (T, 3, 2) float64, each triangle's corners
    in the source), the second (if `shift` is given) to the shape-transfer shift, interpolated linearly inside
    each triangle."""
    drawn = np.nonzero(drawable)[0]
    corners = vertices[triangles[drawn], :2].astype(np.float64)  # (k, 3, 2)
    first_edge, second_edge = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    determinant = (first_edge[:, 0] * second_edge[:, 1] - first_edge[:, 1] * second_edge[:, 0])[:, None]
    values = source_corners[drawn]  # (k, 3, m): the mapped values at the three corners, both tables' side by side
    if shift is not None:
        values = np.concatenate([values, shift[triangles[drawn]].astype(np.float64)], axis=2)
    first_step, second_step = values[:, 1] - values[:, 0], values[:, 2] - values[:, 0]
    along_x = (first_step * second_edge[:, 1:2] - second_step * first_edge[:, 1:2]) / determinant  # d value / dx
    along_y = (second_step * first_edge[:, 0:1] - first_step * second_edge[:, 0:1]) / determinant
    offset = values[:, 0] - along_x * corners[:, 0, 0:1] - along_y * corners[:, 0, 1:2]
    rows = np.stack([along_x, along_y, offset], axis=2).reshape(len(drawn), -1)  # (ax, bx, cx) of each value in turn
    both = np.zeros((len(triangles) + 1, rows.shape[1]), dtype=np.float32)
    both[0, :6] = (0, 0, NO_TRIANGLE, 0, 0, NO_TRIANGLE)
    both[drawn + 1] = rows
    return both[:, :6], (both[:, 6:] if shift is not None else None)


def per_pixel_affine(table: np.ndarray, triangle_ids: np.ndarray, x: np.ndarray,
                     y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pixel's triangle's affine map (`table` rows as in `affine_tables`, picked by the id image) applied to
    (x, y): the mapped x and y images, float32. One gather per coefficient (a gather of whole rows is slower)."""
    x_per_x, x_per_y, x_offset, y_per_x, y_per_y, y_offset = (
        np.take(np.ascontiguousarray(table[:, column]), triangle_ids) for column in range(6))
    return x_per_x * x + x_per_y * y + x_offset, y_per_x * x + y_per_y * y + y_offset


def remapped_maps(maps: list[np.ndarray], map_x: np.ndarray, map_y: np.ndarray) -> tuple[np.ndarray, ...]:
    """float32 `maps` (each H x W) read at (`map_x`, `map_y`), bilinear, the border replicated: as few remaps as
    interpolate them exactly (groups of EXACT_REMAP_CHANNELS)."""
    out: list[np.ndarray] = []
    first = 0
    while first < len(maps):
        count = next(size for size in EXACT_REMAP_CHANNELS if size <= len(maps) - first)
        group = maps[first:first + count]
        stack = cv2.remap(cv2.merge(group) if count > 1 else group[0], map_x, map_y, cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REPLICATE)
        out.extend(cv2.split(stack) if count > 1 else [stack])
        first += count
    return tuple(out)


def warp_source(image: np.ndarray, map_x: np.ndarray, map_y: np.ndarray, magnified: bool,
                interpolation: Literal["linear", "cubic"]) -> np.ndarray:
    """The source `image` rendered on the target mesh: one remap to the source positions (`per_pixel_affine` of the
    map to the source)."""
    kernel = cv2.INTER_CUBIC if interpolation == "cubic" else cv2.INTER_LINEAR
    if magnified:  # a magnified source has no grain at this scale to keep
        return cv2.remap(image, map_x, map_y, kernel, borderMode=cv2.BORDER_REPLICATE)
    return remap_keeping_grain(image, map_x, map_y, kernel)


def remap_keeping_grain(image: np.ndarray, map_x: np.ndarray, map_y: np.ndarray,
                        interpolation: int = cv2.INTER_LINEAR) -> np.ndarray:
    """uint8 `image` resampled at (map_x, map_y): its smooth part (a sigma-1 blur) interpolated, its finest band
    (the rest: pores, fine lines) taken from the nearest pixel. Any interpolation cancels that band at half-pixel
    offsets, so texture moved by a fraction of a pixel would come out smoother than where it stays."""
    values = image.astype(np.float32)
    smooth = cv2.GaussianBlur(values, (0, 0), 1.0)
    resampled = cv2.remap(smooth, map_x, map_y, interpolation, borderMode=cv2.BORDER_REPLICATE)
    resampled += cv2.remap(values - smooth, map_x, map_y, cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
    return np.clip(np.rint(resampled), 0, 255).astype(np.uint8)

"""Masks for the mesh swapper, built from FaceMesh regions in crop pixels.

All masks are float32 in [0, 1] unless noted. Sizes are in pixels; the swapper derives them from fractions of
the face size so behaviour does not depend on resolution.

Distances use the 5x5 chamfer transform (within about 2 % of Euclidean): OpenCV's DIST_MASK_PRECISE is not
bit-reproducible from call to call, and results here must be.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

_SHIFT = 4  # sub-pixel bits for polygon filling
_ONE = 1 << _SHIFT
OUTLINE_SPREADS = ((1, 1.1), (3, 0.48), (4, 0.34))  # (supersample, how far a ramp's middle wanders along a slanted
# outline, px): on whole pixels it steps with them, a staircase where the two sides it blends differ much (a
# lipstick's colour, a kept mouth, a brow in a fringe); 2x finer does little better than whole pixels
RAMP_SPREAD = 0.17  # `fine_edge` keeps that wander within this share of the ramp's width


@dataclass(frozen=True)
class FaceFrame:
    """Where the face is and how big, measured from the mesh in one image.

    center: (2,) the middle of the face oval along its vertical axis.
    down: (2,) unit vector from the eyes toward the mouth (the face's own vertical, so roll is handled).
    half_height: half the oval's extent along `down`.
    size: the larger of the oval's extents along and across `down`, in pixels.
    eye_distance: distance between the two eye-ring centres, in pixels.
    """

    center: np.ndarray
    down: np.ndarray
    half_height: float
    size: float
    eye_distance: float


def face_frame(points: np.ndarray, oval: np.ndarray, left_eye: np.ndarray, right_eye: np.ndarray,
               mouth: np.ndarray) -> FaceFrame:
    """points: (468, >=2) landmarks; the other arguments are index arrays of the rings."""
    xy = np.asarray(points, dtype=np.float64)[:, :2]
    le, re, mo = xy[left_eye].mean(0), xy[right_eye].mean(0), xy[mouth].mean(0)
    eyes = (le + re) / 2
    down = mo - eyes
    n = float(np.hypot(*down))
    if n < 1e-6:
        down = np.array([0.0, 1.0])
    else:
        down = down / n
    across = np.array([-down[1], down[0]])
    o = xy[oval]
    along = o @ down
    side = o @ across
    lo, hi = float(along.min()), float(along.max())
    center = down * (lo + hi) / 2 + across * float(side.min() + side.max()) / 2
    height, width = hi - lo, float(side.max() - side.min())
    return FaceFrame(
        center=center.astype(np.float32),
        down=down.astype(np.float32),
        half_height=max(height / 2, 1.0),
        size=max(height, width, 2.0),
        eye_distance=max(float(np.hypot(*(le - re))), 1.0),
    )


def polygons_signed_distance(shape: tuple[int, int], polygons: list[np.ndarray], reach: float,
                             supersample: int = 1) -> tuple[np.ndarray, tuple[int, int]] | None:
    """Signed distance (float32; > 0 inside) to the outline of the union of the polygons, computed only on
    their bounding box grown by `reach` pixels (clipped to `shape`). Returns (distances, (x0, y0)) of that
    box, or None if the polygons cover no pixel. The outline is filled on whole pixels, so along a slanted edge
    the distance steps by up to half a pixel; `supersample` fills and measures it on that many times finer a grid
    and averages back (for a ramp only a few pixels wide, whose steps would show as a staircase)."""
    h, w = shape
    pts = [np.asarray(p, dtype=np.float64)[:, :2] for p in polygons if len(p)]
    if not pts:
        return None
    allp = np.concatenate(pts)
    r = int(np.ceil(max(reach, 0.0))) + 2
    x0 = max(int(np.floor(allp[:, 0].min())) - r, 0)
    y0 = max(int(np.floor(allp[:, 1].min())) - r, 0)
    x1 = min(int(np.ceil(allp[:, 0].max())) + r + 1, w)
    y1 = min(int(np.ceil(allp[:, 1].max())) + r + 1, h)
    if x1 <= x0 or y1 <= y0:
        return None
    fine = max(1, int(supersample))
    mask = np.zeros(((y1 - y0) * fine, (x1 - x0) * fine), dtype=np.uint8)
    for p in pts:
        # fine pixel j's centre lies at (j + 0.5) / fine - 0.5 in whole pixels
        q = np.round(((p - (x0, y0)) * fine + 0.5 * (fine - 1)) * _ONE).astype(np.int32)
        cv2.fillPoly(mask, [q], 255, lineType=cv2.LINE_8, shift=_SHIFT)
    if not mask.any():
        return None
    inside = cv2.distanceTransform(mask, cv2.DIST_L2, cv2.DIST_MASK_5)
    outside = cv2.distanceTransform(255 - mask, cv2.DIST_L2, cv2.DIST_MASK_5)
    if fine == 1:
        return np.where(mask > 0, inside, -outside).astype(np.float32), (x0, y0)
    # the fine grid's boundary lies half a fine pixel beyond its last inside (or outside) centre
    signed = (np.where(mask > 0, inside - 0.5, 0.5 - outside) / np.float32(fine)).astype(np.float32)
    return cv2.resize(signed, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA), (x0, y0)


def soft_from_distance(shape: tuple[int, int], signed: tuple[np.ndarray, tuple[int, int]] | None,
                       grow_px: float, feather_px: float) -> np.ndarray:
    """Full-size float mask from `polygons_signed_distance`: 1 inside the outline grown by `grow_px`,
    falling smoothly to 0 over `feather_px` centred on the grown outline (0.5 there)."""
    out = np.zeros(shape, dtype=np.float32)
    if signed is None:
        return out
    dist, (x0, y0) = signed
    h, w = dist.shape
    out[y0:y0 + h, x0:x0 + w] = smoothstep((dist + np.float32(grow_px)) / max(float(feather_px), 1e-3) + 0.5)
    return out


def fine_edge(feather_px: float) -> int:
    """The `supersample` that keeps a ramp `feather_px` wide within RAMP_SPREAD of its outline: whole pixels from
    6.5 px on (a larger face costs no more), at most 4x finer."""
    for supersample, spread in OUTLINE_SPREADS:
        if spread <= RAMP_SPREAD * feather_px:
            return supersample
    return OUTLINE_SPREADS[-1][0]


def soft_polygons(shape: tuple[int, int], polygons: list[np.ndarray], grow_px: float,
                  feather_px: float, supersample: int = 1) -> np.ndarray:
    """Float mask that is 1 inside the polygons grown by `grow_px`, falling smoothly to 0 over `feather_px`
    (the distance measured on a `supersample` times finer grid: see `polygons_signed_distance`).

    The ramp is centred on the grown outline (0.5 there)."""
    reach = abs(grow_px) + feather_px
    return soft_from_distance(shape, polygons_signed_distance(shape, polygons, reach, supersample), grow_px,
                              feather_px)


def eroded_feather(coverage: np.ndarray, erode_px: np.ndarray | float, feather_px: float) -> np.ndarray:
    """Alpha from a binary coverage mask: 0 within `erode_px` of its edge, rising smoothly to 1 over
    `feather_px`. `erode_px` may vary per pixel (an array of the mask's shape)."""
    return smoothstep((inside_distance(coverage) - erode_px) / max(float(feather_px), 1e-3))


def inside_distance(coverage: np.ndarray) -> np.ndarray:
    """float32 distance of each pixel of a binary coverage mask to its edge (0 outside); the array's border
    counts as outside, so a face cut by the crop edge fades out before the edge."""
    cov = (np.asarray(coverage) > 0).astype(np.uint8)
    if not cov.any():
        return np.zeros(cov.shape, dtype=np.float32)
    padded = cv2.copyMakeBorder(cov, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    return cv2.distanceTransform(padded, cv2.DIST_L2, cv2.DIST_MASK_5)[1:-1, 1:-1]


def vertical_erosion(shape: tuple[int, int], origin: tuple[int, int], frame: FaceFrame, base_px: float,
                     top_px: float, bottom_px: float) -> np.ndarray:
    """Per-pixel erosion: `base_px` everywhere, growing by up to `top_px` toward the forehead and by up to
    `bottom_px` toward the chin (quadratically along the face's own vertical axis).

    origin: (x0, y0) of the array's top-left pixel in the coordinates `frame` was measured in."""
    h, w = shape
    xs = np.arange(w, dtype=np.float32) + np.float32(origin[0]) - frame.center[0]
    ys = np.arange(h, dtype=np.float32) + np.float32(origin[1]) - frame.center[1]
    v = (xs[None, :] * frame.down[0] + ys[:, None] * frame.down[1]) / np.float32(frame.half_height)
    v = np.clip(v, -1.0, 1.0)
    up = np.square(np.minimum(v, 0.0))
    dn = np.square(np.maximum(v, 0.0))
    return (np.float32(base_px) + np.float32(top_px) * up + np.float32(bottom_px) * dn).astype(np.float32)


def close_small_holes(mask: np.ndarray, radius_px: int) -> np.ndarray:
    """Morphological closing (uint8 in, uint8 out) that fills pinholes and slivers up to ~2*radius wide."""
    r = int(max(radius_px, 0))
    if r == 0:
        return mask
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))
    padded = cv2.copyMakeBorder(mask, r, r, r, r, cv2.BORDER_CONSTANT, value=0)
    closed = cv2.morphologyEx(padded, cv2.MORPH_CLOSE, kernel)
    return closed[r:-r, r:-r]


def smoothstep(x: np.ndarray) -> np.ndarray:
    """3t^2 - 2t^3 of t = clip(x, 0, 1), float32; exactly 0 for x <= 0 and exactly 1 for x >= 1."""
    t = np.clip(np.asarray(x, dtype=np.float32), 0.0, 1.0)
    return (t * t * (np.float32(3.0) - np.float32(2.0) * t)).astype(np.float32)


def dark_lines(luma: np.ndarray, width_px: float) -> np.ndarray:
    """How much darker each pixel is than its surroundings across thin structures up to about `width_px` wide
    (a morphological black-hat): high on rims, lashes and creases, 0 on flat skin and on wide dark areas."""
    r = max(1, int(round(width_px)))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))
    return cv2.morphologyEx(np.asarray(luma, dtype=np.float32), cv2.MORPH_BLACKHAT, kernel)

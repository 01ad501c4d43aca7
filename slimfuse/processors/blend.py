"""Blending a rendered face into its crop, and pasting a processed crop back into the full frame."""
from __future__ import annotations

import cv2
import numpy as np


def feather_blend(base: np.ndarray, overlay: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """base * (1 - alpha) + overlay * alpha, rounded to uint8; pixels with alpha == 0 are exactly `base`.

    base: (H, W, 3) uint8; overlay: (H, W, 3) uint8 or float in 0..255; alpha: (H, W) float in [0, 1]."""
    a = np.clip(np.asarray(alpha, dtype=np.float32), 0.0, 1.0)
    out = base.copy()
    sel = a > 0
    if not sel.any():
        return out
    x0, y0, w, h = cv2.boundingRect(sel.astype(np.uint8))
    x1, y1 = x0 + w, y0 + h
    b = base[y0:y1, x0:x1].astype(np.float32)
    o = np.asarray(overlay[y0:y1, x0:x1], dtype=np.float32)
    aa = a[y0:y1, x0:x1]
    # The alpha spread over the channels once: numpy's broadcast over a trailing axis is several times slower.
    aa = cv2.merge([aa] * b.shape[2]) if b.ndim == 3 else aa
    mixed = np.clip(np.rint(b + cv2.multiply(o - b, aa)), 0, 255).astype(np.uint8)
    # where alpha is 0 the expression is exactly b (float32 holds every uint8 exactly), so no select needed
    out[y0:y1, x0:x1] = mixed
    return out


def poisson_blend(base: np.ndarray, overlay: np.ndarray, alpha: np.ndarray, threshold: float = 0.5,
                  feather: bool = True, max_shift: float | None = None) -> np.ndarray:
    """Gradient-domain blend (cv2.seamlessClone, NORMAL_CLONE) of `overlay` into `base` inside the tight mask
    alpha > threshold; with `feather` the result is then alpha-blended over `base` so the mask edge is soft.
    max_shift: keep only the clone's low-frequency change to `overlay`, clamped to this many levels.
    Pixels with alpha == 0 are exactly `base`."""
    a = np.clip(np.asarray(alpha, dtype=np.float32), 0.0, 1.0)
    mask = (a > threshold).astype(np.uint8) * 255
    if cv2.countNonZero(mask) < 16:
        return feather_blend(base, overlay, a)
    ov = np.clip(np.rint(np.asarray(overlay, dtype=np.float32)), 0, 255).astype(np.uint8)
    # seamlessClone ignores the mask's outer pixel ring and needs the clone region inside the destination:
    # pad everything so a face touching the crop edge still works.
    pad = 4
    bp = cv2.copyMakeBorder(base, pad, pad, pad, pad, cv2.BORDER_REFLECT)
    op = cv2.copyMakeBorder(ov, pad, pad, pad, pad, cv2.BORDER_REFLECT)
    mp = cv2.copyMakeBorder(mask, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=0)
    x, y, w, h = cv2.boundingRect(mp)
    center = (x + w // 2, y + h // 2)
    cloned = cv2.seamlessClone(op, bp, mp, center, cv2.NORMAL_CLONE)[pad:-pad, pad:-pad]
    if max_shift is not None:
        # Only the clone's smooth colour shift is taken, and no more than `max_shift` levels of it: the gradient
        # domain then evens out the seam without pulling the face's own shading (and identity) toward the target.
        o = np.asarray(overlay, dtype=np.float32)
        diff = cloned.astype(np.float32) - o
        sigma = max(1.0, 0.02 * max(w, h))
        diff = cv2.GaussianBlur(diff, (0, 0), sigma)
        cloned = np.clip(np.rint(o + np.clip(diff, -max_shift, max_shift)), 0, 255).astype(np.uint8)
    if feather:
        return feather_blend(base, cloned, a)
    hard = (a > threshold).astype(np.float32)
    return feather_blend(base, cloned, hard)


def paste_back(frame: np.ndarray, crop: np.ndarray, alpha: np.ndarray, crop_from_frame: np.ndarray, *,
               in_place: bool = False) -> np.ndarray:
    """Composite a processed crop back into the full frame it was cut from.

    frame: (H, W, 3) uint8; crop: (h, w, 3) uint8; alpha: (h, w) float32 in [0, 1], where the crop differs
    from what was cut; crop_from_frame: 2x3 affine taking frame pixels to crop pixels. Works only on the
    frame's bounding box of the crop's non-zero alpha, so the cost does not grow with the frame size.
    Returns a new frame, or with `in_place` `frame` itself, written into (a frame the caller owns and no longer
    needs: a video's decoded frame); pixels where the warped alpha is 0 are bit-identical to the input."""
    if frame.ndim != 3 or crop.ndim != 3 or alpha.shape != crop.shape[:2]:
        raise ValueError("paste_back: frame and crop must be HxWx3 and alpha the crop's HxW")
    m = np.asarray(crop_from_frame, dtype=np.float64)
    if m.shape == (3, 3):
        m = m[:2]
    m = m.reshape(2, 3)
    out = frame if in_place else frame.copy()
    a = np.clip(np.asarray(alpha, dtype=np.float32), 0.0, 1.0)
    cx, cy, cw, ch = cv2.boundingRect((a > 0).astype(np.uint8))  # of the mask itself: no list of its points
    if cw == 0 or ch == 0:
        return out
    frame_from_crop = cv2.invertAffineTransform(m)
    # Frame footprint of the alpha's bounding box (one pixel of slack for bilinear reach).
    corners = np.array([[cx - 1, cy - 1], [cx + cw, cy - 1], [cx - 1, cy + ch], [cx + cw, cy + ch]], np.float64)
    fc = corners @ frame_from_crop[:, :2].T + frame_from_crop[:, 2]
    H, W = frame.shape[:2]
    x0 = max(int(np.floor(fc[:, 0].min())) - 1, 0)
    y0 = max(int(np.floor(fc[:, 1].min())) - 1, 0)
    x1 = min(int(np.ceil(fc[:, 0].max())) + 2, W)
    y1 = min(int(np.ceil(fc[:, 1].max())) + 2, H)
    if x1 <= x0 or y1 <= y0:
        return out
    # Crop pixel for ROI pixel (u, v): m @ (u + x0, v + y0, 1).
    roi_m = m.copy()
    roi_m[:, 2] += m[:, 0] * x0 + m[:, 1] * y0
    size = (x1 - x0, y1 - y0)
    shift = _whole_pixel_shift(roi_m, size, crop.shape[:2])
    if shift is not None:  # a crop cut on whole pixels: the warp would copy pixels, so slice instead
        u, v = shift
        warped, wa = crop[v:v + size[1], u:u + size[0]], a[v:v + size[1], u:u + size[0]]
    else:
        flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
        warped = cv2.warpAffine(crop, roi_m, size, flags=flags, borderMode=cv2.BORDER_REPLICATE)
        wa = cv2.warpAffine(a, roi_m, size, flags=flags, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    out[y0:y1, x0:x1] = feather_blend(out[y0:y1, x0:x1], warped, wa)
    return out


def _whole_pixel_shift(roi_m: np.ndarray, size: tuple[int, int], crop_shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(u, v) when `roi_m` only moves by whole pixels and the ROI of `size` lies inside the crop there."""
    if not np.array_equal(roi_m[:, :2], np.eye(2)) or not np.array_equal(roi_m[:, 2], np.round(roi_m[:, 2])):
        return None
    u, v = int(roi_m[0, 2]), int(roi_m[1, 2])
    if u < 0 or v < 0 or u + size[0] > crop_shape[1] or v + size[1] > crop_shape[0]:
        return None
    return u, v

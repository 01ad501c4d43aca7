"""The quality-gate metrics: how far a variant's outputs are from the original's on the same inputs.

Pure functions on arrays, so each can be checked by hand: landmark error in pixels, detection agreement (IoU,
recall, precision), cosine similarity, PSNR and SSIM.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from slimfuse.metrics import IDENTICAL_PSNR
from slimfuse.metrics import psnr as psnr_8bit
from slimfuse.faces.geometry import iou

MAX_PSNR = IDENTICAL_PSNR
"""PSNR of identical images (instead of infinity, so results stay valid JSON)."""
MATCH_IOU = 0.5


def landmark_errors(reference: np.ndarray, variant: np.ndarray) -> np.ndarray:
    """Per-point distance in pixels between two (..., P, >=2) landmark sets (x, y; z is ignored)."""
    a = np.asarray(reference, dtype=np.float64)[..., :2]
    b = np.asarray(variant, dtype=np.float64)[..., :2]
    return np.linalg.norm(a - b, axis=-1)


@dataclass(frozen=True)
class BoxAgreement:
    iou: float
    """Sum of the matched pairs' IoU over the faces either model found (a face only one finds counts 0)."""
    recall: float
    """Share of the original's faces the variant also finds (IoU >= 0.5)."""
    precision: float
    """Share of the variant's faces the original also finds."""
    matched_iou: float
    """Mean IoU of the matched pairs."""
    reference_faces: int
    variant_faces: int


def box_agreement(reference: Sequence[np.ndarray], variant: Sequence[np.ndarray],
                  match_iou: float = MATCH_IOU) -> BoxAgreement:
    """How well two detectors agree over images: `reference[i]` and `variant[i]` are the (N, 4) x0 y0 x1 y1 boxes
    each found in image i. Pairs are matched one to one, highest IoU first, at IoU >= `match_iou`."""
    matched: list[float] = []
    total_reference = total_variant = 0
    for ref_boxes, var_boxes in zip(reference, variant, strict=True):
        ref = np.asarray(ref_boxes, dtype=np.float64).reshape(-1, 4)
        var = np.asarray(var_boxes, dtype=np.float64).reshape(-1, 4)
        total_reference += len(ref)
        total_variant += len(var)
        if not len(ref) or not len(var):
            continue
        table = np.stack([iou(box, var) for box in ref])
        while table.size and table.max() >= match_iou:
            r, v = np.unravel_index(int(np.argmax(table)), table.shape)
            matched.append(float(table[r, v]))
            table[r, :] = -1.0
            table[:, v] = -1.0
    union = total_reference + total_variant - len(matched)
    return BoxAgreement(
        iou=float(sum(matched) / union) if union else 1.0,
        recall=len(matched) / total_reference if total_reference else 1.0,
        precision=len(matched) / total_variant if total_variant else 1.0,
        matched_iou=float(np.mean(matched)) if matched else (1.0 if not union else 0.0),
        reference_faces=total_reference,
        variant_faces=total_variant,
    )


def cosine_similarities(reference: np.ndarray, variant: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two (N, D) arrays (0 where a row is all zeros)."""
    a = np.asarray(reference, dtype=np.float64).reshape(len(reference), -1)
    b = np.asarray(variant, dtype=np.float64).reshape(len(variant), -1)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.where(norms > 0, np.sum(a * b, axis=1) / np.maximum(norms, 1e-300), 0.0)


def psnr(reference: np.ndarray, variant: np.ndarray, peak: float = 1.0) -> float:
    """Peak signal-to-noise ratio in dB of two images of the same shape (values up to `peak`); MAX_PSNR when
    they are identical; 0 when the variant holds NaN or inf."""
    b = np.asarray(variant, dtype=np.float64)
    if not np.all(np.isfinite(b)):
        return 0.0
    scale = 255.0 / peak
    return psnr_8bit(np.asarray(reference, dtype=np.float64) * scale, b * scale)


def ssim(reference: np.ndarray, variant: np.ndarray, peak: float = 1.0) -> float:
    """Structural similarity (Wang et al. 2004: 11-px Gaussian window, sigma 1.5, K1 0.01, K2 0.03) of two
    (H, W) or (H, W, C) images, averaged over pixels and channels; 0 when the variant holds NaN or inf."""
    a = np.asarray(reference, dtype=np.float64)
    b = np.asarray(variant, dtype=np.float64)
    if not np.all(np.isfinite(b)):
        return 0.0
    if a.ndim == 2:
        a, b = a[..., None], b[..., None]
    c1, c2 = (0.01 * peak) ** 2, (0.03 * peak) ** 2

    def blur(x: np.ndarray) -> np.ndarray:
        return cv2.GaussianBlur(x, (11, 11), 1.5, borderType=cv2.BORDER_REFLECT)

    scores = []
    for channel in range(a.shape[2]):
        x, y = np.ascontiguousarray(a[..., channel]), np.ascontiguousarray(b[..., channel])
        mx, my = blur(x), blur(y)
        vx, vy, cov = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
        index = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
        scores.append(float(index.mean()))
    return float(np.mean(scores))

"""Colour: the source takes the target's lighting. A wide, skin-only low-frequency gain (see processors/color.py),
its statistics taken on the skin alone (no lips, mouth or eyes), damped on the lips and eyes so they keep their
colour; then the lips take the target's lips' colour (its lipstick, or the tone of its own lips), keeping the
source's lip shape and texture."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors import color as color_ops
from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_swap.mesh import SwapMesh
from slimfuse.processors.mesh_swap.tuning import MeshTuning


LIPS_MIN_PIXELS = 12  # fewer lip pixels shown than this give no colour to match


def feature_masks(vertices: np.ndarray, mesh: SwapMesh, size: float,
                  shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the facial features (lips, eyes) are, float32: `not_skin`, left out of the colour statistics and the
    detail; `damping`, where the colour gain is withheld (a tighter fit); `lips`, the lips between their outer and
    inner rings."""
    outer_lips = mesh.ring_points(vertices, "lips_outer")
    features = [outer_lips] + [mesh.ring_points(vertices, name) for name in ("left_eye", "right_eye")]
    signed_distance = mask_ops.polygons_signed_distance(shape, features, 0.04 * size)
    not_skin = mask_ops.soft_from_distance(shape, signed_distance, 0.02 * size, 0.03 * size)
    damping = mask_ops.soft_from_distance(shape, signed_distance, 0.005 * size, 0.02 * size)
    feather = max(1.0, 0.02 * size)  # as soft as `damping`: a harder edge draws a liner around a darker colour
    # (and measured finely: a lipstick's colour shift drew a staircase along a lip's slanted edge)
    lips = (mask_ops.soft_polygons(shape, [outer_lips], 0.0, feather, mask_ops.fine_edge(feather))
            * (1.0 - mask_ops.soft_polygons(shape, [mesh.ring_points(vertices, "lips_inner")], 0.0, feather,
                                            mask_ops.fine_edge(feather))))
    return not_skin, damping, lips


def skin_weight(outer: np.ndarray, not_skin: np.ndarray, trust: np.ndarray, painted: np.ndarray,
                alpha: np.ndarray) -> np.ndarray:
    """Where the colour statistics are taken (float32): the face's skin inside the mask, where the texture is
    trusted; the face's alpha where that leaves next to nothing."""
    weight = outer * (1.0 - not_skin) * trust
    weight[~painted] = 0.0
    if float(weight.sum()) < 1.0:
        weight = alpha.copy() + 1e-6
    return weight


def matched_color(warped: np.ndarray, target: np.ndarray, weight: np.ndarray, damping: np.ndarray,
                  frame: mask_ops.FaceFrame, tuning: MeshTuning) -> np.ndarray:
    """`warped` (uint8) with the `target`'s low frequencies, measured where `weight` is, over a blur of `color_sigma`
    eye distances (`chroma_sigma` for the chroma); the gain withheld by `feature_color_damping` where `damping` is.
    float32."""
    return color_ops.match_low_frequency(warped, target, weight, tuning.color_sigma * frame.eye_distance,
                                         tuning.color_strength, damping * np.float32(tuning.feature_color_damping),
                                         tuning.chroma_sigma * frame.eye_distance)


def matched_lips(corrected: np.ndarray, target: np.ndarray, lips: np.ndarray, shown: np.ndarray, strength: float,
                 lightness: float) -> np.ndarray:
    """`corrected` (float32 RGB, 0-255) with its lips' median CIELAB colour moved toward the `target`'s lips' (uint8,
    the same pixels), weighted by `lips`: their a*, b* by `strength` (0-1), their L* by `lightness` of that. A
    constant shift, so the source's lip shading and texture stay. Measured on both where the lips are (> 0.5) and
    the face is `shown`; unchanged where too few such pixels are."""
    measured = (lips > 0.5) & shown
    if strength <= 0 or int(np.count_nonzero(measured)) < LIPS_MIN_PIXELS:
        return corrected
    rows, columns = np.nonzero(lips > 0)
    window = (slice(int(rows.min()), int(rows.max()) + 1), slice(int(columns.min()), int(columns.max()) + 1))
    scale = np.float32(1.0 / 255.0)
    source_lab = cv2.cvtColor(np.ascontiguousarray(corrected[window]) * scale, cv2.COLOR_RGB2Lab)
    target_lab = cv2.cvtColor(target[window].astype(np.float32) * scale, cv2.COLOR_RGB2Lab)
    inside = measured[window]
    shift = (np.median(target_lab[inside], axis=0) - np.median(source_lab[inside], axis=0)) * (lightness, 1.0, 1.0)
    source_lab += (np.float32(strength) * lips[window])[..., None] * shift.astype(np.float32)
    out = corrected.copy()
    out[window] = np.clip(cv2.cvtColor(source_lab, cv2.COLOR_Lab2RGB) * np.float32(255.0), 0.0, 255.0)
    return out

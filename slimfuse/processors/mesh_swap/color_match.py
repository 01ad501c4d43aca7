"""Colour: the source takes the target's lighting. A wide, skin-only low-frequency gain (see processors/color.py),
its statistics taken on the skin alone (no lips, mouth or eyes), damped on the lips and eyes so they keep their
colour."""
from __future__ import annotations

import numpy as np

from slimfuse.processors import color as color_ops
from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_swap.mesh import SwapMesh
from slimfuse.processors.mesh_swap.tuning import MeshTuning


def feature_masks(vertices: np.ndarray, mesh: SwapMesh, size: float,
                  shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Where the facial features (lips, eyes) are, float32: `not_skin`, left out of the colour statistics and the
    detail; `damping`, where the colour gain is withheld (a tighter fit)."""
    features = [mesh.ring_points(vertices, name) for name in ("lips_outer", "left_eye", "right_eye")]
    signed_distance = mask_ops.polygons_signed_distance(shape, features, 0.04 * size)
    not_skin = mask_ops.soft_from_distance(shape, signed_distance, 0.02 * size, 0.03 * size)
    damping = mask_ops.soft_from_distance(shape, signed_distance, 0.005 * size, 0.02 * size)
    return not_skin, damping


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

"""The seam: the rendered face brought to the target's own light and grain where it meets the target.

The colour step matches the face's light over a wide blur (most of an eye distance). At the mask edge the source's
own shading still differs from the target's by tens of levels (its cheek and jaw turning away, its outline's
shadow), and a source sharper than the target brings its grain there; the alpha ramp turns both into an outline
around the face. Over the ramp and a little further in (the `seam` map), the face's light below `seam_light` face
sizes is the target's. Its grain in octave bands up to `seam_grain` is held to the target's local energy (never
raised: a smoother source is topped up by the detail step) over a wider zone (`grain`), so a wrinkled source's
texture fades in instead of starting at once where the light does, which drew the edge of a mask. Further in, the
face is the source's. The light is the target's around a kept shut eye too (`around`): the target's lids and the
skin kept with them meet the source's there, and a lit cheek or a strand of hair across the eye would otherwise
stand out as a pale or dark patch. And around the source's fringe or hat, which is not used: the target's forehead
shows through there, and the source's skin next to it lies in their shadow, which drew a dark band across the
target's forehead."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors import color as color_ops
from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_swap.tuning import MeshTuning


def seam_matched(corrected: np.ndarray, target: np.ndarray, seam: np.ndarray, grain_zone: np.ndarray,
                 shown: np.ndarray, size: float, tuning: MeshTuning) -> np.ndarray:
    """`corrected` (float32) with the `target`'s (uint8) light where `seam` (float32, 0-1) is and its grain where
    `grain_zone` (the same, reaching further in) is; both lights are measured where the face is `shown` (bool: its
    alpha is above 0, not the pixels left to the target)."""
    if not (seam.any() or grain_zone.any()) or not shown.any():
        return corrected
    target_float = target.astype(np.float32)
    # Both lights over the same pixels, the same way: a face that is the target's own comes back as itself (to the
    # float rounding).
    weight, sigma = shown.astype(np.float32), max(1.0, tuning.seam_light * size)
    face_light, target_light = color_ops.normalized_blurs([corrected, target_float], weight, sigma)
    # Off the shown pixels the face's light stands in, so what lies there (hair, unpainted) adds no grain nearby.
    grain = np.where(shown[..., None], corrected, face_light) - face_light
    grain = _grain_held(grain, color_ops.luma(target_float - target_light), grain_zone, tuning.seam_grain * size)
    result = face_light + seam[..., None] * (target_light - face_light) + grain
    return np.clip(result, 0.0, 255.0, out=result)


def _grain_held(grain: np.ndarray, target_grain: np.ndarray, seam: np.ndarray, finest_coarse: float) -> np.ndarray:
    """`grain` (H, W, 3) with each octave band (1 px, 2 px, ... below `finest_coarse`) scaled where `seam` is, so
    its local luma energy is at most the `target_grain`'s (H, W) in the same band."""
    held = np.zeros_like(grain)
    sigma = 1.0
    while sigma < finest_coarse:
        smooth, target_smooth = cv2.GaussianBlur(grain, (0, 0), sigma), cv2.GaussianBlur(target_grain, (0, 0), sigma)
        band = grain - smooth
        energy = cv2.GaussianBlur(np.square(color_ops.luma(band)), (0, 0), 2.0 * sigma)
        target_energy = cv2.GaussianBlur(np.square(target_grain - target_smooth), (0, 0), 2.0 * sigma)
        gain = np.sqrt(np.minimum(np.float32(1.0), target_energy / np.maximum(energy, np.float32(1e-6))))
        held += band * (1.0 - seam * (1.0 - gain))[..., None]
        grain, target_grain = smooth, target_smooth
        sigma *= 2.0
    return held + grain


def around(region: np.ndarray, reach: float) -> np.ndarray:
    """1 on `region` (float32, > 0.5 inside) and its edge, falling smoothly to 0 `reach` px outside it."""
    outside = cv2.distanceTransform((region <= 0.5).astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_5)
    return 1.0 - mask_ops.smoothstep(outside / np.float32(max(reach, 1.0)))

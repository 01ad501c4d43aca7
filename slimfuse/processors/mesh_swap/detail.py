"""Fine detail: the skin's finest luma band brought near the target's. A wrinkled source on a smooth face is damped
to about twice the target's energy; a smaller, magnified source, lacking the target's pore-scale band, gets the
target's own band carried in (on skin only, in luma only), fully near the mask border so the grain runs on across
it. Either way the skin's texture matches across the mask border."""
from __future__ import annotations

import math

import cv2
import numpy as np

from slimfuse.processors import color as color_ops
from slimfuse.processors.mesh_swap.tuning import MeshTuning

SMALLEST_SKIN = 16  # fewer skin pixels than this tell nothing of the skin's detail


def matched_detail(corrected: np.ndarray, target: np.ndarray, weight: np.ndarray, not_skin: np.ndarray,
                   border: np.ndarray, magnification: float, tuning: MeshTuning) -> np.ndarray:
    """`corrected` (float32, changed in place) with its finest luma band (blur sigma 0.5 x `magnification`, at least
    1 px) scaled on the skin so its energy there is near the `target`'s: damped (down to `detail_floor`) to twice the
    target's where the source has more, and topped up with the target's own band where it has less: at most
    `detail_transfer` of it inside the face (more carries the target's identity), up to the target's energy in the
    `border` zone, so the skin's grain runs on across the mask edge."""
    skin = (weight > 0.5 * float(weight.max())) & (not_skin < 0.5)
    skin_count = int(np.count_nonzero(skin))
    if skin_count < SMALLEST_SKIN:
        return corrected
    sigma = max(1.0, 0.5 * magnification)
    target_band = _finest_band(color_ops.luma(target), sigma)
    source_band = _finest_band(color_ops.luma(corrected), sigma)
    flat_skin = skin.ravel().astype(np.float32)
    target_energy = float(np.dot(flat_skin, np.square(target_band).ravel())) / skin_count
    source_energy = float(np.dot(flat_skin, np.square(source_band).ravel())) / skin_count
    if source_energy > 2.0 * target_energy:  # up to twice the target's passes: it reads as the same kind of skin
        gain = max(tuning.detail_floor, math.sqrt(2.0 * target_energy / source_energy))
        delta = np.float32(gain - 1.0) * source_band
    elif source_energy < target_energy:
        missing = math.sqrt(1.0 - source_energy / max(target_energy, 1e-6))
        inner = min(tuning.detail_transfer, missing)
        texture = _texture(target_band, skin, sigma, tuning.detail_texture)
        delta = (np.float32(missing - inner) * border + np.float32(inner)) * texture
    else:
        return corrected
    delta *= 1.0 - not_skin
    corrected += cv2.merge([delta, delta, delta])  # numpy's broadcast over channels is several times slower
    return np.clip(corrected, 0.0, 255.0, out=corrected)


def _finest_band(luma: np.ndarray, sigma: float) -> np.ndarray:
    return luma - cv2.GaussianBlur(luma, (0, 0), sigma)


def _texture(band: np.ndarray, skin: np.ndarray, sigma: float, limit: float) -> np.ndarray:
    """`band` as texture only: where its local energy is above `limit` times its median on the skin (an edge of the
    target's own features, which would ghost over the source's and pull the identity back), it is scaled down to
    that; pores and fine wrinkles pass."""
    local = cv2.GaussianBlur(np.square(band), (0, 0), 2.0 * sigma)
    # The median of every other pixel each way: `local` is blurred well past that spacing, so it is the same level at
    # a quarter of the cost.
    sample = local[::2, ::2][skin[::2, ::2]]
    typical = np.float32(limit * _median(sample if sample.size else local[skin]))
    return band * np.sqrt(np.minimum(1.0, typical / np.maximum(local, 1e-6)))


def _median(values: np.ndarray) -> float:
    """np.median of a flat float32 array, to the bit, from one partition (np.median's checks cost more than that
    on a few thousand values)."""
    half = values.size // 2
    if values.size % 2:
        return float(np.partition(values, half)[half])
    part = np.partition(values, [half - 1, half])
    return float((part[half - 1] + part[half]) / values.dtype.type(2))

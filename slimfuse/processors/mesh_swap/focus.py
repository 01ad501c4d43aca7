"""Focus: the rendered face blurred to the target's focus. A face out of focus in a group photo, or softened by a
small size or JPEG, would otherwise get the source's sharp features and skin pasted into it.

How blurred a face is shows at the strongest edges around its features (eyes, lashes, lips), which are step
edges on every face, unlike the skin, whose fine detail is the person's own (a wrinkled source on a smooth face is
the detail step's business). Blurred once more by a known Gaussian, a step edge keeps a share of its gradient that
depends on its own blur alone, not on its contrast (re-blur defocus estimation), so both faces' blurs are read the
same way and the source is blurred by the difference (blurs add in squares): it follows the target's blur smoothly
from frame to frame, by at most the largest blur given (`MeshTuning.max_focus_blur` of the face size: more takes
the likeness of small faces). A source as blurred as the target or more is left as it is."""
from __future__ import annotations

import math

import cv2
import numpy as np

from slimfuse.processors import color as color_ops

REBLUR = 1.0  # the measure's second blur (px)
EDGES = 0.1  # the share of the features' pixels the measure reads: their strongest edges
SMALLEST_FEATURES = 16  # fewer feature pixels than this tell nothing of the focus
REACHED = 1e-3  # a pixel with less shown weight than this within a blur's reach keeps its own value


def matched_focus(corrected: np.ndarray, target: np.ndarray, features: np.ndarray, shown: np.ndarray,
                  largest_blur: float) -> np.ndarray:
    """`corrected` (float32 RGB of the rendered face) blurred where it is `shown` (bool: its alpha is above 0) so
    that its `features` (bool: eyes and lips) are as sharp as the `target`'s (uint8) there, by at most
    `largest_blur` px."""
    zone = features & shown
    if int(np.count_nonzero(zone)) < SMALLEST_FEATURES or largest_blur <= 0:
        return corrected
    # Measured around the features only, as far as the measure's blur reaches.
    x, y, width, height = cv2.boundingRect(zone.astype(np.uint8))
    reach = int(np.ceil(3.0 * REBLUR)) + 2
    window = np.s_[max(0, y - reach):y + height + reach, max(0, x - reach):x + width + reach]
    blur = focus_blur(color_ops.luma(corrected[window]), color_ops.luma(target[window].astype(np.float32)),
                      zone[window], largest_blur)
    return shown_blur(corrected, shown, blur) if blur > 0 else corrected


def focus_blur(luma: np.ndarray, target_luma: np.ndarray, zone: np.ndarray, largest_blur: float) -> float:
    """The Gaussian sigma (px, 0 to `largest_blur`) that makes `luma` as blurred as `target_luma` at the edges in
    `zone`: blurs add in squares."""
    have, wanted = edge_blur(luma, zone), edge_blur(target_luma, zone)
    return min(largest_blur, math.sqrt(max(wanted * wanted - have * have, 0.0)))


def edge_blur(luma: np.ndarray, zone: np.ndarray) -> float:
    """The Gaussian sigma (px) `luma`'s strongest edges in `zone` (its top EDGES share by gradient) are blurred by:
    blurred once more by REBLUR, a step edge blurred by sigma keeps sigma / sqrt(sigma^2 + REBLUR^2) of its
    gradient, whatever its contrast; the median over those edges. A sharp photo's edges read about 0.7-0.9 px
    (the pixels' own size and the lens)."""
    gradient = _gradient(luma)
    strongest = zone & (gradient >= np.quantile(gradient[zone], 1.0 - EDGES))
    kept = gradient[strongest] / np.maximum(_gradient(cv2.GaussianBlur(luma, (0, 0), REBLUR))[strongest], 1e-6)
    kept = np.maximum(kept, np.float32(1.0 + 1e-4))  # noise can read an edge sharper than sharp
    return float(np.median(REBLUR / np.sqrt(np.square(kept) - 1.0)))


def _gradient(luma: np.ndarray) -> np.ndarray:
    return cv2.magnitude(cv2.Sobel(luma, cv2.CV_32F, 1, 0), cv2.Sobel(luma, cv2.CV_32F, 0, 1))


def shown_blur(image: np.ndarray, shown: np.ndarray, sigma: float) -> np.ndarray:
    """`image` (float32 HxWx3) blurred by `sigma` px over its `shown` pixels only (what lies off them is not shown:
    off the face, the source's eye under a kept shut one, its hair; it must not bleed in); pixels with nothing
    shown within reach stay as they were. Not `color.normalized_blur`: that one is for wide blurs (it works on a
    shrunk grid) and fills such pixels with the image's mean."""
    weight = shown.astype(np.float32)
    spread = cv2.GaussianBlur(weight, (0, 0), sigma)
    # OpenCV's per-channel arithmetic: numpy's broadcast over channels is several times slower.
    blurred = cv2.GaussianBlur(cv2.multiply(image, cv2.merge([weight] * 3)), (0, 0), sigma)
    blurred = cv2.divide(blurred, cv2.merge([np.maximum(spread, np.float32(REACHED))] * 3))
    np.copyto(blurred, image, where=(spread <= REACHED)[..., None])
    return blurred

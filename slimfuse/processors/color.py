"""Low-frequency colour transfer: give the warped source skin the target's lighting and tone, keep its detail.

The correction is a per-pixel, per-channel gain: the ratio of the Gaussian-blurred target over the
Gaussian-blurred warped source. Both blurs are normalised convolutions restricted to a weight map (the face's
skin), so the background, hair, eyes and mouth outside that weight do not bleed into the estimate. The blur
is wide (about 0.6 x the inter-eye distance), so only lighting gradients and overall tone move; wrinkles,
brows, eyes and lips of the source stay. The gain can be damped per pixel (on lips and eyes) so they keep
their own colour instead of taking the skin's correction in full.
"""
from __future__ import annotations

import cv2
import numpy as np

# The blur runs on a copy shrunk so that sigma is about this many pixels: cheap at any sigma.
_WORKING_SIGMA = 3.0
_MIN_GAIN, _MAX_GAIN = 1.0 / 3.0, 3.0


def normalized_blur(image: np.ndarray, weight: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of `image` (H, W, C float32) that only averages where `weight` (H, W) is positive.

    Returns float32 (H, W, C): sum(G * w * I) / sum(G * w). Where no weight lies within reach the weighted
    mean of the whole image is used, so the result is defined everywhere."""
    img: np.ndarray = np.asarray(image, dtype=np.float32)
    w: np.ndarray = np.clip(np.asarray(weight, dtype=np.float32), 0.0, None)
    h, wd = w.shape
    factor = max(1.0, float(sigma) / _WORKING_SIGMA)
    sh, sw = max(1, int(round(h / factor))), max(1, int(round(wd / factor)))
    num: np.ndarray = img * w[..., None]
    den: np.ndarray
    if (sh, sw) != (h, wd):
        num = cv2.resize(num, (sw, sh), interpolation=cv2.INTER_AREA)
        den = cv2.resize(w, (sw, sh), interpolation=cv2.INTER_AREA)
    else:
        den = w
    total = float(den.sum())
    if total <= 0:
        raise ValueError("normalized_blur: the weight map is empty")
    mean = num.reshape(-1, img.shape[2]).sum(0) / total
    s = float(sigma) * sw / wd
    num = cv2.GaussianBlur(num, (0, 0), s, borderType=cv2.BORDER_CONSTANT)
    den = cv2.GaussianBlur(den, (0, 0), s, borderType=cv2.BORDER_CONSTANT)
    if num.ndim == 2:
        num = num[..., None]
    eps = np.float32(1e-3)
    small = (num + eps * mean[None, None, :]) / (den[..., None] + eps)
    if (sh, sw) != (h, wd):
        small = cv2.resize(small, (wd, h), interpolation=cv2.INTER_LINEAR)
        if small.ndim == 2:
            small = small[..., None]
    return small.astype(np.float32)


def low_frequency_gain(warped: np.ndarray, target: np.ndarray, weight: np.ndarray, sigma: float,
                       strength: float = 1.0, damping: np.ndarray | None = None) -> np.ndarray:
    """Per-pixel, per-channel gain (H, W, 3 float32) that moves `warped`'s low frequencies to `target`'s.

    warped, target: (H, W, 3) in 0..255 (any dtype); weight: (H, W) where the statistics are taken;
    strength: exponent on the gain (0 = no change, 1 = full match);
    damping: optional (H, W) in [0, 1]: the gain's exponent is scaled by (1 - damping) there."""
    tb = normalized_blur(np.asarray(target, dtype=np.float32), weight, sigma)
    wb = normalized_blur(np.asarray(warped, dtype=np.float32), weight, sigma)
    log_gain = np.log(np.clip((tb + 1.0) / (wb + 1.0), _MIN_GAIN, _MAX_GAIN))
    k: np.ndarray | np.float32 = np.float32(strength)
    if damping is not None:
        k = k * (1.0 - np.clip(np.asarray(damping, dtype=np.float32), 0.0, 1.0))[..., None]
    return np.exp(log_gain * k).astype(np.float32)


def match_low_frequency(warped: np.ndarray, target: np.ndarray, weight: np.ndarray, sigma: float,
                        strength: float = 1.0, damping: np.ndarray | None = None) -> np.ndarray:
    """The warped source with the target's low-frequency colour: float32 (H, W, 3) clipped to 0..255."""
    gain = low_frequency_gain(warped, target, weight, sigma, strength, damping)
    return np.clip(np.asarray(warped, dtype=np.float32) * gain, 0.0, 255.0)

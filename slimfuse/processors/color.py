"""Low-frequency colour transfer: give the warped source skin the target's lighting and tone, keep its detail.

The correction is a per-pixel, per-channel gain: the ratio of the Gaussian-blurred target over the
Gaussian-blurred warped source. Both blurs are normalised convolutions restricted to a weight map (the face's
skin), so the background, hair, eyes and mouth outside that weight do not bleed into the estimate. The blur
is wide (about 0.6 x the inter-eye distance), so only lighting gradients and overall tone move; wrinkles,
brows, eyes and lips of the source stay. The gain can be damped per pixel (on lips and eyes) so they keep
their own colour instead of taking the skin's correction in full. `match_low_frequency`, which the mesh swapper
uses, does this on luma and moves chroma relative to luma (the target's skin chromaticity times each pixel's
brightness), so shaded pixels, brows and lashes do not turn a saturated brown.
"""
from __future__ import annotations

import cv2
import numpy as np

# The blur runs on a copy shrunk so that sigma is about this many pixels: cheap at any sigma.
_WORKING_SIGMA = 3.0
_MIN_GAIN, _MAX_GAIN = 1.0 / 3.0, 3.0
_CHROMA_OFFSET = 16.0  # luma levels added before chroma is taken relative to luma, so near-black stays stable


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


def to_opponent(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) RGB in 0..255 -> float32 (luma Y, R - Y, B - Y): linear, so it inverts exactly."""
    img = np.asarray(rgb, dtype=np.float32)
    y = img @ _LUMA
    return np.dstack([y, img[..., 0] - y, img[..., 2] - y])


def _colourfulness(chroma: np.ndarray) -> np.ndarray:
    """max - min of R, G, B for opponent chroma (R - Y, B - Y): independent of luma, and scaled by any factor on
    the chroma."""
    cr, cb = chroma[..., 0], chroma[..., 1]
    cg = -(_LUMA[0] * cr + _LUMA[2] * cb) / _LUMA[1]
    return np.maximum(np.maximum(cr, cb), cg) - np.minimum(np.minimum(cr, cb), cg)


def from_opponent(yc: np.ndarray) -> np.ndarray:
    y, cr, cb = yc[..., 0], yc[..., 1], yc[..., 2]
    r, b = y + cr, y + cb
    g = (y - _LUMA[0] * r - _LUMA[2] * b) / _LUMA[1]
    return np.dstack([r, g, b])


_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def match_low_frequency(warped: np.ndarray, target: np.ndarray, weight: np.ndarray, sigma: float,
                        strength: float = 1.0, damping: np.ndarray | None = None) -> np.ndarray:
    """The warped source with the target's low-frequency colour: float32 (H, W, 3) clipped to 0..255.

    Luma and chroma apart, so no step creates a colour that neither photo has:
    - luma: the source's times a low-frequency gain (clamped to 1/3..3) toward the target's, damped where asked
      (lips, eyes);
    - chroma, taken relative to luma (R - Y and B - Y over Y, so shading scales it as it does in a photo): the
      target's low-frequency chroma plus the source's chroma detail (its chroma minus its own low frequencies),
      scaled down by how much less chroma detail the target's face has (a grey face gets none), and no pixel
      more colourful than the more colourful of the source pixel and the target's local colour (scaled down on
      pixels darker than it).
    """
    src = to_opponent(warped)
    tgt = to_opponent(target)
    tb = normalized_blur(tgt, weight, sigma)
    sb = normalized_blur(src, weight, sigma)
    k: np.ndarray | np.float32 = np.float32(strength)
    if damping is not None:
        k = k * (1.0 - np.clip(np.asarray(damping, dtype=np.float32), 0.0, 1.0))
    gain = np.exp(np.log(np.clip((tb[..., 0] + 1.0) / (sb[..., 0] + 1.0), _MIN_GAIN, _MAX_GAIN)) * k)
    y = src[..., 0] * gain
    w = np.clip(np.asarray(weight, dtype=np.float32), 0.0, None)
    sel = w > 0.5 * float(w.max())
    # The skin's chroma relative to its luma (chromaticity): shading is multiplicative, so a darker pixel of the
    # same skin, a brow or a lash, carries proportionally less of it; adding the bright skin's chroma to it in
    # full would make it a saturated brown that neither photo has. The source's chroma detail is what its pixel
    # has beyond its own skin's chromaticity at that brightness.
    e = np.float32(_CHROMA_OFFSET)
    sb_ratio = sb[..., 1:] / (sb[..., :1] + e)
    tb_ratio = tb[..., 1:] / (tb[..., :1] + e)
    s_detail = src[..., 1:] - sb_ratio * (src[..., :1] + e)
    t_detail = tgt[..., 1:] - tb_ratio * (tgt[..., :1] + e)
    spread_s = float(np.sqrt(np.mean(np.square(s_detail[sel])))) if sel.any() else 0.0
    spread_t = float(np.sqrt(np.mean(np.square(t_detail[sel])))) if sel.any() else 0.0
    keep = min(1.0, spread_t / max(spread_s, 1e-3))
    st = np.float32(strength)
    low = (tb_ratio * st + sb_ratio * (1 - st)) * (y[..., None] + e)
    c = low + s_detail * np.float32(keep + (1.0 - keep) * (1.0 - float(strength)))
    # No pixel more colourful (max - min of R, G, B, which scales with the chroma) than the source pixel or the
    # target's local colour, the latter less on pixels darker than it.
    darker = (np.minimum(y, tb[..., 0]) + e) / (tb[..., 0] + e)
    limit = np.maximum(_colourfulness(src[..., 1:]), _colourfulness(tb[..., 1:]) * darker)
    c *= np.minimum(1.0, limit / np.maximum(_colourfulness(c), 1e-6))[..., None]
    out = from_opponent(np.dstack([y, c]))
    return np.clip(out, 0.0, 255.0).astype(np.float32)

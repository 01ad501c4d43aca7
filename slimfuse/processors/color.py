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

import math

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
    return normalized_blurs([image], weight, sigma)[0]


def normalized_blurs(images: list[np.ndarray], weight: np.ndarray, sigma: float) -> list[np.ndarray]:
    """`normalized_blur` of each image under one weight, whose sums are made once."""
    h, wd = np.shape(weight)[:2]
    out = []
    for small in _normalized_blurs_small([np.asarray(image, dtype=np.float32) for image in images], weight, sigma):
        if small.shape[:2] != (h, wd):
            small = cv2.resize(small, (wd, h), interpolation=cv2.INTER_LINEAR)
        if small.ndim == 2:
            small = small[..., None]
        out.append(small.astype(np.float32))
    return out


def _normalized_blurs_small(images: list[np.ndarray], weight: np.ndarray, sigma: float) -> list[np.ndarray]:
    """`normalized_blur` of each image under one weight (its sums made once), on the shrunk grid it is computed on
    (H / f, W / f, C) with f = sigma / _WORKING_SIGMA (at least 1): the result is smooth at that scale, so it is only
    enlarged where it is used."""
    w: np.ndarray = np.clip(np.asarray(weight, dtype=np.float32), 0.0, None)
    h, wd = w.shape
    factor = max(1.0, float(sigma) / _WORKING_SIGMA)
    sh, sw = max(1, int(round(h / factor))), max(1, int(round(wd / factor)))
    shrink = (sh, sw) != (h, wd)
    den = cv2.resize(w, (sw, sh), interpolation=cv2.INTER_AREA) if shrink else w
    total = float(den.sum())
    if total <= 0:
        raise ValueError("normalized_blur: the weight map is empty")
    s = float(sigma) * sw / wd
    eps = np.float32(1e-3)
    den = cv2.GaussianBlur(den, (0, 0), s, borderType=cv2.BORDER_CONSTANT)[..., None] + eps
    spread: dict[int, np.ndarray] = {}
    out = []
    for image in images:
        img: np.ndarray = np.asarray(image, dtype=np.float32)
        channels = 1 if img.ndim == 2 else img.shape[2]
        if channels not in spread:  # the weight once per channel: numpy's broadcast over channels is slow
            spread[channels] = cv2.merge([w] * channels) if channels > 1 else w
        num: np.ndarray = cv2.multiply(img, spread[channels])
        if shrink:
            num = cv2.resize(num, (sw, sh), interpolation=cv2.INTER_AREA)
        mean = num.reshape(-1, channels).sum(0) / total
        num = cv2.GaussianBlur(num, (0, 0), s, borderType=cv2.BORDER_CONSTANT)
        if num.ndim == 2:
            num = num[..., None]
        out.append(((num + eps * mean[None, None, :]) / den).astype(np.float32))
    return out


def low_frequency_gain(warped: np.ndarray, target: np.ndarray, weight: np.ndarray, sigma: float,
                       strength: float = 1.0, damping: np.ndarray | None = None) -> np.ndarray:
    """Per-pixel, per-channel gain (H, W, 3 float32) that moves `warped`'s low frequencies to `target`'s.

    warped, target: (H, W, 3) in 0..255 (any dtype); weight: (H, W) where the statistics are taken;
    strength: exponent on the gain (0 = no change, 1 = full match);
    damping: optional (H, W) in [0, 1]: the gain's exponent is scaled by (1 - damping) there."""
    tb, wb = normalized_blurs([target, warped], weight, sigma)
    log_gain = np.log(np.clip((tb + 1.0) / (wb + 1.0), _MIN_GAIN, _MAX_GAIN))
    k: np.ndarray | np.float32 = np.float32(strength)
    if damping is not None:
        k = k * (1.0 - np.clip(np.asarray(damping, dtype=np.float32), 0.0, 1.0))[..., None]
    return np.exp(log_gain * k).astype(np.float32)


# RGB -> (luma Y, R - Y, B - Y): linear, so it inverts exactly.
_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
_TO_OPPONENT = np.array([_LUMA, [1.0, 0.0, 0.0] - _LUMA, [0.0, 0.0, 1.0] - _LUMA], dtype=np.float32)


def luma(rgb: np.ndarray) -> np.ndarray:
    """float32 luma (H, W) of an RGB image."""
    return cv2.transform(np.asarray(rgb, dtype=np.float32), _LUMA[None, :])


def to_opponent(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) RGB in 0..255 -> float32 (luma Y, R - Y, B - Y)."""
    return cv2.transform(np.asarray(rgb, dtype=np.float32), _TO_OPPONENT)


def _rgb(y: np.ndarray, cr: np.ndarray, cb: np.ndarray) -> np.ndarray:
    r, b = y + cr, y + cb
    g = (y - _LUMA[0] * r - _LUMA[2] * b) / _LUMA[1]
    return cv2.merge([r, g, b])


def _colourfulness(cr: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """max - min of R, G, B for opponent chroma (R - Y, B - Y): independent of luma, and scaled by any factor on
    the chroma."""
    cg = (-_LUMA[0] / _LUMA[1]) * cr - (_LUMA[2] / _LUMA[1]) * cb
    return np.maximum(np.maximum(cr, cb), cg) - np.minimum(np.minimum(cr, cb), cg)


def _enlarged(shape: tuple[int, int], *planes: np.ndarray) -> list[np.ndarray]:
    """Each float32 plane bilinearly enlarged to `shape`."""
    h, w = shape
    return [p if p.shape == (h, w) else cv2.resize(p, (w, h), interpolation=cv2.INTER_LINEAR) for p in planes]


def _masked_square_sum(mask: np.ndarray, values: np.ndarray) -> float:
    """sum(values ** 2) over the pixels where the flat 0/1 `mask` is 1."""
    flat = values.ravel()
    return float(np.dot(mask, flat * flat))


def match_low_frequency(warped: np.ndarray, target: np.ndarray, weight: np.ndarray, sigma: float,
                        strength: float = 1.0, damping: np.ndarray | None = None,
                        chroma_sigma: float | None = None) -> np.ndarray:
    """The warped source with the target's low-frequency colour: float32 (H, W, 3) clipped to 0..255.

    Luma and chroma apart, so no step creates a colour that neither photo has:
    - luma: the source's times a low-frequency gain (clamped to 1/3..3) toward the target's, damped where asked
      (lips, eyes);
    - chroma, taken relative to luma (R - Y and B - Y over Y, so shading scales it as it does in a photo): the
      target's low-frequency chroma plus the source's chroma detail (its chroma minus its own low frequencies),
      scaled down by how much less chroma detail the target's face has (a grey face gets none), and no pixel
      more colourful than the more colourful of the source pixel and the target's local colour (scaled down on
      pixels darker than it).
    The smooth fields (gain, chromaticities, the target's local colour) are computed on the blur's shrunk grid and
    enlarged once; the per-pixel work runs on whole planes. The chroma's blur is `chroma_sigma` (default `sigma`):
    a narrower one follows light whose colour changes across the face (a lamp on one side, a screen on the other)
    without carrying the target's shading, which is in the luma.
    """
    h, wd = weight.shape[:2]
    src = to_opponent(warped)
    tgt = to_opponent(target)
    sy, sr, sbl = cv2.split(src)
    ty, tr, tbl = cv2.split(tgt)
    e = np.float32(_CHROMA_OFFSET)
    target_low, source_low = _normalized_blurs_small([tgt, src], weight, sigma)
    ty_lo, sy_lo = cv2.split(target_low)[0], cv2.split(source_low)[0]
    if chroma_sigma is not None and chroma_sigma != sigma:
        target_low, source_low = _normalized_blurs_small([tgt, src], weight, chroma_sigma)
    cy_lo, tr_lo, tb_lo = cv2.split(target_low)  # the chroma's fields, with the luma they are relative to
    cy_src_lo, sr_lo, sb_lo = cv2.split(source_low)
    # The skin's chroma relative to its luma (chromaticity): shading is multiplicative, so a darker pixel of the
    # same skin, a brow or a lash, carries proportionally less of it; adding the bright skin's chroma to it in
    # full would make it a saturated brown that neither photo has. The source's chroma detail is what its pixel
    # has beyond its own skin's chromaticity at that brightness.
    log_gain, t_luma = _enlarged((h, wd), np.log(np.clip((ty_lo + 1.0) / (sy_lo + 1.0), _MIN_GAIN, _MAX_GAIN)), ty_lo)
    s_ratio_r, s_ratio_b, t_ratio_r, t_ratio_b, t_colour = _enlarged(
        (h, wd), sr_lo / (cy_src_lo + e), sb_lo / (cy_src_lo + e), tr_lo / (cy_lo + e), tb_lo / (cy_lo + e),
        _colourfulness(tr_lo, tb_lo))
    k: np.ndarray | np.float32 = np.float32(strength)
    if damping is not None:
        k = k * (1.0 - np.clip(np.asarray(damping, dtype=np.float32), 0.0, 1.0))
    y = sy * np.exp(log_gain * k)
    w = np.asarray(weight, dtype=np.float32)
    sel = (w > 0.5 * float(w.max())).astype(np.float32).ravel()
    sye = sy + e
    s_detail_r = sr - s_ratio_r * sye
    s_detail_b = sbl - s_ratio_b * sye
    keep = 1.0
    count = float(sel.sum())
    if count > 0:
        tye = ty + e
        spread_s = math.sqrt(0.5 * (_masked_square_sum(sel, s_detail_r) + _masked_square_sum(sel, s_detail_b)) / count)
        spread_t = math.sqrt(0.5 * (_masked_square_sum(sel, tr - t_ratio_r * tye)
                                    + _masked_square_sum(sel, tbl - t_ratio_b * tye)) / count)
        keep = min(1.0, spread_t / max(spread_s, 1e-3))
    st = np.float32(strength)
    detail = np.float32(keep + (1.0 - keep) * (1.0 - float(strength)))
    ye = y + e
    if strength == 1.0:
        c_r, c_b = t_ratio_r * ye, t_ratio_b * ye
    else:
        c_r = (t_ratio_r * st + s_ratio_r * (1 - st)) * ye
        c_b = (t_ratio_b * st + s_ratio_b * (1 - st)) * ye
    c_r += s_detail_r * detail
    c_b += s_detail_b * detail
    # No pixel more colourful (max - min of R, G, B, which scales with the chroma) than the source pixel or the
    # target's local colour, the latter less on pixels darker than it.
    darker = (np.minimum(y, t_luma) + e) / (t_luma + e)
    limit = np.maximum(_colourfulness(sr, sbl), t_colour * darker)
    scale = np.minimum(1.0, limit / np.maximum(_colourfulness(c_r, c_b), 1e-6))
    out = _rgb(y, c_r * scale, c_b * scale)
    return np.clip(out, 0.0, 255.0, out=out)


def match_colours(reference: np.ndarray, image: np.ndarray, steps: int = 3) -> np.ndarray:
    """`image` (uint8) with the colours of `reference` (uint8, any size), coarse to fine, as FaceFusion's
    match_frame_color: a guide starts as the reference; at `steps` sizes from 16 px up to (not reaching) the image's
    side, the guide becomes the image plus the difference of the two area-averaged to that size (bicubic back up,
    clipped, truncated to uint8). The result is the last guide: the image's detail finer than the last size, the
    reference's colours at every coarser one."""
    height, width = image.shape[:2]
    guide = reference
    for side in np.linspace(16, height, steps, endpoint=False):
        size = (int(round(side / 2)) * 2,) * 2  # FaceFusion's even sizes
        difference = (cv2.resize(guide, size, interpolation=cv2.INTER_AREA).astype(np.float32)
                      - cv2.resize(image, size, interpolation=cv2.INTER_AREA).astype(np.float32))
        spread = cv2.resize(difference, (width, height), interpolation=cv2.INTER_CUBIC)
        guide = np.clip(image + spread, 0, 255).astype(np.uint8)
    return guide

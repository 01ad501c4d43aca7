"""Reading and writing still images.

Reading honours EXIF orientation and keeps what the output needs to look like the input (grey stays grey,
alpha is kept, 16-bit stays 16-bit). Writing goes through slimfuse.atomic (a temporary name in the destination
directory, renamed into place only when complete), so a failed or interrupted run never leaves a partial output.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError
from PIL.PngImagePlugin import PngInfo

from slimfuse.atomic import AtomicFile, Notify, remove_stale, write_error

from slimfuse.errors import (
    ImageTooLargeError,
    InputCorruptError,
    InputEmptyError,
    InputMissingError,
    InputUnreadableError,
    UnsupportedTypeError,
)
from slimfuse.media.c2pa_sign import signing_step
from slimfuse.media.destination import image_format
from slimfuse.media.formats import IMAGE_SUFFIXES
from slimfuse.media.provenance import XMP_FORMATS, ProvenanceLabel

# 16K x 16K: far above 8K frames, below what would exhaust memory on a small machine.
MAX_PIXELS = 16384 * 16384


@dataclass(frozen=True)
class LoadedImage:
    """An image as read from disk.

    rgb: HxWx3 uint8, what the analysis and the processors work on.
    alpha: HxW array of the original depth, or None.
    grey: the file had no colour, so the output is written grey too.
    high: HxWx3 uint16 pixels when the file held 16 bits per channel, else None.
    """

    path: Path
    rgb: np.ndarray
    alpha: np.ndarray | None = None
    grey: bool = False
    high: np.ndarray | None = None
    icc_profile: bytes | None = None


def check_readable(path: Path) -> None:
    """Raise the error that says why `path` cannot be read, if it cannot."""
    if not path.exists():
        raise InputMissingError(path)
    if path.is_dir():
        raise InputUnreadableError(path, "is a folder, not an image or video file")
    if not path.is_file() or not os.access(path, os.R_OK):
        raise InputUnreadableError(path)
    if path.stat().st_size == 0:
        raise InputEmptyError(path)


def read_image(path: Path) -> LoadedImage:
    check_readable(path)
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        raise UnsupportedTypeError(path, f"unsupported image type '{path.suffix}' (use {', '.join(IMAGE_SUFFIXES)})")
    try:
        with Image.open(path) as opened:
            width, height = opened.size
            if width * height > MAX_PIXELS:
                raise ImageTooLargeError(path, f"image is {width}x{height}, more than {MAX_PIXELS} pixels")
            image = ImageOps.exif_transpose(opened)
            image.load()
            return _to_loaded(path, image, opened.info.get("icc_profile"))
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(path, str(exc)) from exc
    except UnidentifiedImageError as exc:
        raise InputCorruptError(path, "not a readable image (corrupt, or not an image at all)") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise InputCorruptError(path, f"image is corrupt or truncated ({exc})") from exc


def _to_loaded(path: Path, image: Image.Image, icc: bytes | None) -> LoadedImage:
    mode = image.mode
    grey = mode in ("1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "F")
    alpha = None
    if mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in image.info):
        alpha = np.asarray(image.convert("RGBA"))[..., 3].copy()
    high = None
    if mode.startswith("I;16") or mode == "I":
        # 16-bit grey: keep the full depth for the pixels the swap does not touch.
        values = np.asarray(image, dtype=np.uint32).astype(np.uint16)
        high = np.repeat(values[..., None], 3, axis=2)
        rgb = (high >> 8).astype(np.uint8)
    else:
        rgb = np.asarray(image.convert("RGB"))
    return LoadedImage(path=path, rgb=np.ascontiguousarray(rgb), alpha=alpha, grey=grey, high=high, icc_profile=icc)


def compose_output(loaded: LoadedImage, rgb: np.ndarray) -> Image.Image:
    """Turn processed 8-bit RGB back into an image shaped like the input (grey, alpha, 16-bit). Processed RGBA (a
    transparent background) keeps its alpha, within the input's own (the lower of the two at each pixel)."""
    if rgb.shape[2] == 4:
        return _with_alpha(loaded, rgb)
    if loaded.high is not None:
        # Unchanged pixels keep their 16-bit values; changed ones are widened from 8 bits.
        changed = np.any(rgb != loaded.rgb, axis=2, keepdims=True)
        wide = np.where(changed, rgb.astype(np.uint16) * 257, loaded.high)
        grey16 = wide[..., 0] if loaded.grey else wide.mean(axis=2).astype(np.uint16)
        return Image.fromarray(grey16.astype(np.uint16))
    image = Image.fromarray(rgb, "RGB")
    if loaded.grey:
        image = image.convert("L")
    if loaded.alpha is not None:
        image = image.convert("LA" if loaded.grey else "RGBA")
        image.putalpha(Image.fromarray(loaded.alpha.astype(np.uint8)))
    return image


def _with_alpha(loaded: LoadedImage, rgba: np.ndarray) -> Image.Image:
    alpha = rgba[..., 3]
    if loaded.alpha is not None and loaded.alpha.shape == alpha.shape:
        own = loaded.alpha if loaded.alpha.dtype == np.uint8 else (loaded.alpha >> 8).astype(np.uint8)
        alpha = np.minimum(alpha, own)
    if loaded.grey:
        return Image.fromarray(np.dstack([rgba[..., 0], alpha]), "LA")
    return Image.fromarray(np.ascontiguousarray(np.dstack([rgba[..., :3], alpha])), "RGBA")


def write_image_atomic(image: Image.Image, path: Path, icc_profile: bytes | None = None, *, quality: int = 95,
                       provenance: ProvenanceLabel | None = None, notify: Notify | None = None) -> None:
    """Write to a temporary file beside `path`, then rename: the output exists whole or not at all.

    quality: of JPEG and WebP outputs (1-100). provenance: the label that says the image is synthetic (XMP in JPEG,
    PNG and WebP; BMP holds none), and a signed C2PA manifest when the label has a signer; None writes no label.
    Temporary files that dead runs left in the folder are removed first, each reported through `notify`."""
    fmt = image_format(path)
    if fmt in ("JPEG", "BMP") and image.mode in ("RGBA", "LA", "I;16"):
        image = image.convert("RGB" if image.mode == "RGBA" else "L")
    options: dict[str, object] = {"format": fmt}
    if fmt == "JPEG":
        options.update(quality=quality, subsampling=0)
    if fmt == "WEBP":
        options.update(quality=quality)
    if icc_profile and fmt in ("JPEG", "PNG", "WEBP"):
        options["icc_profile"] = icc_profile
    if provenance is not None:
        options.update(_xmp_options(fmt, provenance))
    parent = path.parent if str(path.parent) else Path(".")
    remove_stale(parent, notify)
    try:
        with AtomicFile(path, signing_step(path, provenance, notify)) as atomic, atomic.open() as handle:
            image.save(handle, **options)
    except OSError as exc:
        raise write_error(path, exc) from exc


def _xmp_options(fmt: str, label: ProvenanceLabel) -> dict[str, object]:
    if fmt == "PNG":
        # Pillow's PNG writer takes no xmp option: the packet goes in the iTXt chunk that XMP readers look for.
        info = PngInfo()
        info.add_itxt("XML:com.adobe.xmp", label.xmp().decode("utf-8"), zip=False)
        return {"pnginfo": info}
    return {"xmp": label.xmp()} if fmt in XMP_FORMATS else {}


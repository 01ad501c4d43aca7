"""Swap faces in one still image: a one-frame pass of the frame loop between reading and an atomic write."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np

from slimfuse.errors import NoTargetFaceError
from slimfuse.media.image_io import LoadedImage, compose_output, read_image, write_image_atomic
from slimfuse.pipeline.frames import FrameStats
from slimfuse.pipeline.run import Run
from slimfuse.processors.lip_sync import check_lip_sync_targets


@dataclass(frozen=True)
class ImageResult:
    output: Path
    stats: FrameStats


def swap_frame(run: Run, rgb: np.ndarray, origin: Path,
               reference: np.ndarray | None = None) -> tuple[np.ndarray, FrameStats]:
    """The RGB image with its selected faces swapped (RGBA for a transparent background); NoTargetFaceError
    (naming `origin`) when none is and a stage needs faces (a chain of frame stages alone works on a picture
    without any); LipSyncAudioError when the run lip-syncs (a still has no time for the sound).
    reference: an RGB photo of the person to swap (reference selection for this image)."""
    check_lip_sync_targets(run.chain.processors, origin, False, None)
    keep = reference is not None or run.config.faces.face_selector_mode == "reference"
    loop = run.loop(run.prepare(keep_identity=keep), reference)
    run.mark("sources")
    targets = loop.analyse(rgb, 0.0)
    if not targets and run.chain.works_on_faces:
        raise NoTargetFaceError(origin)
    return loop.render(rgb.copy(), targets, overwrite=True), loop.stats()


def swap_image_file(run: Run, target: Path, output: Path, reference: np.ndarray | None = None) -> ImageResult:
    """Read `target`, swap, write `output` (its type from its extension) whole or not at all; the caller has
    checked the output (media.destination.check_output)."""
    loaded = read_image(target)
    result, stats = swap_frame(run, loaded.rgb, target, reference)
    result = at_output_scale(result, loaded.rgb.shape, run.config.output.output_image_scale)
    run.mark("processing")
    write_image_atomic(compose_output(scaled_like(loaded, result), result), output, loaded.icc_profile,
                       quality=run.config.output.output_image_quality, provenance=run.provenance, notify=run.notify)
    run.mark("write")
    return ImageResult(output, stats)


def at_output_scale(rgb: np.ndarray, target_shape: tuple[int, ...], scale: float) -> np.ndarray:
    """The result at --output-image-scale times the target's size (1: as it came, which is the frame enhancer's
    scale when it keeps it); area-averaged when it shrinks, bicubic when it grows."""
    if scale == 1.0:
        return rgb
    height, width = target_shape[:2]
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    if size == (rgb.shape[1], rgb.shape[0]):
        return rgb
    shrinks = size[0] * size[1] < rgb.shape[0] * rgb.shape[1]
    return cv2.resize(rgb, size, interpolation=cv2.INTER_AREA if shrinks else cv2.INTER_CUBIC)


def scaled_like(loaded: LoadedImage, rgb: np.ndarray) -> LoadedImage:
    """`loaded` at `rgb`'s size, when the frame enhancer kept its scale: the alpha scaled with it, 16-bit images
    widened from the 8-bit result (no pixel is left unchanged by an upscale)."""
    height, width = rgb.shape[:2]
    if loaded.rgb.shape[:2] == (height, width):
        return loaded
    alpha = None if loaded.alpha is None else cv2.resize(loaded.alpha, (width, height),
                                                         interpolation=cv2.INTER_LINEAR)
    high = None if loaded.high is None else rgb.astype(np.uint16) * np.uint16(257)
    return replace(loaded, rgb=rgb, alpha=alpha, high=high)

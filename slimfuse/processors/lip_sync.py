"""The lip syncer (wav2lip_96, wav2lip_gan_96, edtalk_256) as a FaceProcessor: each face's mouth follows the sound
at its frame's time, as FaceFusion 3.8.1's lip syncer draws it.

crop: the face aligned to ffhq_512 at 512 px. process: each crop with the mel window of its frame's time
(`FaceCrop.time`, slimfuse.media.voice), one model call per face.
- wav2lip: the box of the face's 68 points in the crop, warped to 96 px (area averaging when it shrinks, else
  bilinear), fed as BGR twice (its lower half blacked out, then whole) with the window scaled by 2 x the weight; the
  96 px answer is warped back over the whole crop (edges replicated) and shows through the lower-face area mask (the
  hull of the 68 points from the nose's base down the jaw, its edge softened by 5 px as FaceFusion's is).
- edtalk: the crop shrunk to 256 px (area averaging), RGB, with the weight as its input; the answer is enlarged
  back to 512 px (bicubic) and shows through the box mask (--face-mask-blur, --face-mask-padding).
Where --face-mask-types names occlusion, either mask is also cut by the occlusion mask (their minimum); the other
mask types do not apply, as in FaceFusion. Model outputs in [0, 1] become pixels by truncation, as FaceFusion's do.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from slimfuse.config import LipSyncOptions, MaskOptions
from slimfuse.errors import LipSyncAudioError
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.faces.types import Face
from slimfuse.media.voice import Separate, Voice, log_mel, read_voice
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.neural.lip_syncers import (EDTALK, FACE_CROP, FACE_INPUT, FACE_TEMPLATE, LIP_SYNCER_TYPES,
                                                MEL_INPUT, WEIGHT_INPUT)
from slimfuse.models.pool import ModelPool
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto, aligned_crop
from slimfuse.processors.mask_types import area_mask, box_mask, combine
from slimfuse.processors.paste_masks import FaceMasker

AREA_SIGMA = 5.0
"""The lower-face mask's edge softening in pixels of the 512 px crop (FaceFusion's)."""
LOWER_FACE = ("lower-face",)
SHORT_SOUND_S = 0.1
"""How much shorter than the video the sound may be (its last windows are then silence, as in FaceFusion)."""


def read_sound(sound: Path | None, separate: Separate | None = None) -> Voice:
    """The voice of the lip syncer's sound (RunConfig.sound), separated by the voice extractor when given;
    LipSyncAudioError (exit 36) when there is none, it has no audio stream or it cannot be decoded."""
    return read_voice(require_sound(sound), separate)


def require_sound(sound: Path | None) -> Path:
    """The lip syncer's sound (RunConfig.sound); LipSyncAudioError (exit 36) when there is none."""
    if sound is None:
        raise LipSyncAudioError(detail="the lip syncer needs a sound: --source-audio FILE, or a sound file or video "
                                       "among -s/--source-paths")
    return sound


def check_target(voice: Voice, sound: Path, target: Path, is_video: bool, video_seconds: float | None) -> None:
    """LipSyncAudioError (exit 36) when `target` is not a video or the sound is more than SHORT_SOUND_S shorter than
    the video's `video_seconds` (None: the container does not say)."""
    if not is_video:
        raise LipSyncAudioError(target, "the lip syncer needs a video target (its mouth follows the sound in time)")
    if video_seconds is not None and voice.duration + SHORT_SOUND_S < video_seconds:
        raise LipSyncAudioError(sound, f"its audio lasts {voice.duration:.2f} s, shorter than the target video "
                                       f"({video_seconds:.2f} s)")


def check_lip_sync_targets(processors: Sequence[object], target: Path, is_video: bool,
                           video_seconds: float | None) -> None:
    """`check_target` for each lip syncer among a chain's processors."""
    for processor in processors:
        if isinstance(processor, LipSyncProcessor):
            check_target(processor.voice, processor.sound, target, is_video, video_seconds)


class LipSyncProcessor:
    changes_over_time = True
    """Its result follows the sound at the frame's time: never reused from an earlier frame."""

    def __init__(self, pool: ModelPool, options: LipSyncOptions, masks: MaskOptions, voice: Voice, sound: Path,
                 batcher: AdaptiveBatcher) -> None:
        """options: the model and its weight; masks: the run's (the box's blur and padding, whether the occlusion
        mask is on); voice: the sound the lips follow, on the target's timeline (read from `sound`)."""
        model = options.lip_syncer_model
        spec = pool.store.catalog.get(model)
        if spec.kind != "lip_syncer" or spec.io is None or spec.io.crop_size is None:
            raise ValueError(f"{model} is not a lip syncer")
        self.pool = pool
        self.model = model
        self.kind = LIP_SYNCER_TYPES[model]
        self.size: int = spec.io.crop_size
        self.weight = options.lip_syncer_weight
        self.masks = masks
        self.voice = voice
        self.sound = sound
        self.batcher = batcher
        self.occluder = (FaceMasker(pool, replace(masks, face_mask_types=("occlusion",)), None)
                         if "occlusion" in masks.face_mask_types else None)
        # The voice extractor ran on the sound as the stage was built; the run may release it with the sources'.
        self.preparation_models: tuple[str, ...] = tuple(filter(None, [options.voice_extractor]))
        self.generator_models: tuple[str, ...] = (model,)

    def prepare(self, sources: Sequence[SourcePhoto]) -> None:
        self.pool.session(self.model)  # load (and check) the model and the occluder before any frame
        if self.occluder is not None:
            self.occluder.load()

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return aligned_crop(frame, face, FACE_TEMPLATE, FACE_CROP)

    def mel(self, seconds: float) -> np.ndarray:
        """The model's `source` input for a frame at `seconds`: [1, 80, 16] (the batch axis is added per call)."""
        window = log_mel(self.voice.window(seconds))
        if self.kind != EDTALK:
            window = window * np.float32(self.weight * 2.0)
        return window[None]

    def process(self, crops: Sequence[FaceCrop], prepared: None) -> list[Processed]:
        if not crops:
            return []
        mels = np.stack([self.mel(crop.time) for crop in crops])
        if self.kind == EDTALK:
            results = self._edtalk(crops, mels)
        else:
            results = self._wav2lip(crops, mels)
        if self.occluder is not None:
            occlusion = self.occluder.masks(crops)
            results = [Processed(result.image, combine([result.alpha, mask]))
                       for result, mask in zip(results, occlusion, strict=True)]
        return results

    def _edtalk(self, crops: Sequence[FaceCrop], mels: np.ndarray) -> list[Processed]:
        faces = np.stack([cv2.resize(crop.image, (self.size, self.size), interpolation=cv2.INTER_AREA)
                          for crop in crops]).transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
        weight = np.array([self.weight], dtype=np.float32)
        outputs = self.batcher.run(self.model, {MEL_INPUT: mels, FACE_INPUT: faces}, {WEIGHT_INPUT: weight})
        box = box_mask(FACE_CROP, FACE_CROP, self.masks.face_mask_blur, self.masks.face_mask_padding)
        return [Processed(cv2.resize(to_pixels(output), (FACE_CROP, FACE_CROP), interpolation=cv2.INTER_CUBIC), box)
                for output in outputs]

    def _wav2lip(self, crops: Sequence[FaceCrop], mels: np.ndarray) -> list[Processed]:
        points = [landmarks_68(crop.landmarks) for crop in crops]
        boxes = [face.min(axis=0).tolist() + face.max(axis=0).tolist() for face in points]
        matrices = [box_matrix(box, self.size) for box in boxes]
        faces = np.stack([wav2lip_input(lower_face(crop.image, box, self.size))
                          for crop, box in zip(crops, boxes, strict=True)])
        outputs = self.batcher.run(self.model, {MEL_INPUT: mels, FACE_INPUT: faces})
        results = []
        for output, matrix, face in zip(outputs, matrices, points, strict=True):
            image = cv2.warpAffine(to_pixels(output)[..., ::-1], cv2.invertAffineTransform(matrix),
                                   (FACE_CROP, FACE_CROP), borderMode=cv2.BORDER_REPLICATE)
            results.append(Processed(image, area_mask(face, FACE_CROP, FACE_CROP, LOWER_FACE, AREA_SIGMA)))
        return results


def box_matrix(box: Sequence[float], size: int) -> np.ndarray:
    """The 2x3 affine taking the box (x1, y1, x2, y2) onto a size x size square."""
    x1, y1, x2, y2 = box
    corners = np.array([[x1, y1], [x2, y1], [x1, y2]], dtype=np.float32)
    square = np.array([[0, 0], [size, 0], [0, size]], dtype=np.float32)
    return cv2.getAffineTransform(corners, square)


def lower_face(crop: np.ndarray, box: Sequence[float], size: int) -> np.ndarray:
    """The box (x1, y1, x2, y2) of the crop at size x size px (area averaging where it shrinks, else bilinear)."""
    x1, y1, x2, y2 = box
    shrinks = x2 - x1 > size or y2 - y1 > size
    return cv2.warpAffine(crop, box_matrix(box, size), (size, size),
                          flags=cv2.INTER_AREA if shrinks else cv2.INTER_LINEAR)


def wav2lip_input(face: np.ndarray) -> np.ndarray:
    """[6, S, S] float32: the face as BGR / 255 with its lower half black, then whole."""
    bgr = face[..., ::-1]
    masked = bgr.copy()
    masked[face.shape[0] // 2:] = 0
    return np.concatenate([masked, bgr], axis=2).transpose(2, 0, 1).astype(np.float32) / np.float32(255)


def to_pixels(output: np.ndarray) -> np.ndarray:
    """A [3, S, S] model output in [0, 1] as S x S x 3 uint8 (truncated)."""
    return (output.transpose(1, 2, 0).clip(0, 1) * 255).astype(np.uint8)

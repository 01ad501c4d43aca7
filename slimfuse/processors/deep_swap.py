"""The deep swapper (`--processors deep_swapper`): a DFM face model puts the one person it was trained on into every
selected face; it needs no source photo.

crop: the face aligned to the `dfl_whole_face` template at the file's own size (its `in_face:0`). process: each crop
sharpened (an unsharp mask: 1.75 x the crop - 0.75 x its Gaussian blur of sigma 2), fed BGR / 255 with the morph
factor (`--deep-swapper-morph` / 100, where the file takes one); the person's face comes back BGR 0..1 and is
brought toward the crop's colours (slimfuse.processors.match_color). Its alpha is the model's own mask (the lesser of
the input face's and the person's masks, eroded by two passes of a 3 x 3 ellipse and blurred with sigma 6.25)
combined by their minimum with the run's face masks (`--face-mask-types`, computed on the target's crop), as
FaceFusion 3.8.1 does. The file's contract is checked on its first load: a file that does not fit is one line naming
it (and it is moved aside, as any model file that fails).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from slimfuse.config import DeepSwapOptions
from slimfuse.faces.types import Face
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.neural.deep_swappers import FACE_INPUT, MORPH_INPUT, TEMPLATE
from slimfuse.models.pool import ModelPool
from slimfuse.models.validate import describe, session_inputs
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto, aligned_crop
from slimfuse.processors.match_color import match_colours
from slimfuse.processors.paste_masks import FaceMasker

LOG = logging.getLogger(__name__)
SHARPEN_AMOUNT = 0.75
SHARPEN_SIGMA = 2.0
MASK_ERODE = (3, 2)
"""The model mask's erosion: an ellipse of this side, this many passes."""
MASK_SIGMA = 6.25
OUTPUTS = 3


@dataclass(frozen=True)
class DfmShape:
    """What a DFM file's session says about it: its face size and whether it takes a morph factor."""

    size: int
    morph: bool


def dfm_shape(session: object) -> DfmShape | str:
    """The file's face size and morph input, or what is wrong with it ('expected ..., found ...')."""
    inputs = {tensor.name: tensor for tensor in session_inputs(session)}
    face = inputs.get(FACE_INPUT)
    if face is None or len(face.shape) != 4:
        return f"expected a DFM face model with {FACE_INPUT}[N,H,W,3], found inputs {describe(inputs.values())}"
    height, width = face.shape[1:3]
    if not isinstance(height, int) or height != width:
        return f"expected a square {FACE_INPUT} of a fixed size, found {describe([face])}"
    outputs = session.get_outputs()  # type: ignore[attr-defined]
    if len(outputs) != OUTPUTS:
        return (f"expected {OUTPUTS} outputs (the face mask, the person's face, the person's mask), found "
                f"{len(outputs)}: {', '.join(output.name for output in outputs)}")
    return DfmShape(size=height, morph=MORPH_INPUT in inputs)


class DeepSwapProcessor:
    def __init__(self, pool: ModelPool, options: DeepSwapOptions, masker: FaceMasker,
                 batcher: AdaptiveBatcher) -> None:
        """options: the run's (the DFM model or file and the morph); masker: the run's face masks; batcher: the run's
        batch sizes and out-of-memory back-off."""
        model = options.model
        spec = pool.store.catalog.get(model)
        if spec.kind != "deep_swapper":
            raise ValueError(f"{model} is not a DFM face model")
        self.pool = pool
        self.model = model
        self.morph = np.array([options.deep_swapper_morph / 100.0], dtype=np.float32)
        self.masker = masker
        self.batcher = batcher
        self.preparation_models: tuple[str, ...] = ()
        self.generator_models: tuple[str, ...] = (model,)
        self._shape: DfmShape | None = None

    @property
    def shape(self) -> DfmShape:
        """The loaded file's size and morph input (the file is loaded and checked on first use)."""
        if self._shape is None:
            found = dfm_shape(self.pool.session(self.model))
            if isinstance(found, str):
                path = self.pool.store.path(self.model)
                self.pool.release(self.model)
                self.pool.store.reject(self.model, path, found)
            if not found.morph and self.morph[0] != 1.0:
                LOG.info(f"{self.model} takes no morph factor; --deep-swapper-morph does nothing with it")
            self._shape = found
        return self._shape

    @property
    def size(self) -> int:
        return self.shape.size

    def prepare(self, sources: Sequence[SourcePhoto]) -> None:
        """Load and check the file and the mask models before any frame; the sources are not needed."""
        _ = self.shape
        self.masker.load()

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return aligned_crop(frame, face, TEMPLATE, self.size)

    def process(self, crops: Sequence[FaceCrop], prepared: None) -> list[Processed]:
        if not crops:
            return []
        faces = np.stack([sharpened(crop.image)[..., ::-1] for crop in crops]).astype(np.float32) / np.float32(255)
        shared = {MORPH_INPUT: self.morph} if self.shape.morph else {}
        face_masks, people, people_masks = self.batcher.run_outputs(self.model, {FACE_INPUT: faces}, shared)
        alphas = self.masker.masks(crops)
        results = []
        for crop, person, face_mask, person_mask, alpha in zip(crops, people, face_masks, people_masks, alphas,
                                                                strict=True):
            image = match_colours(crop.image, to_rgb8(person))
            results.append(Processed(image=image, alpha=np.minimum(alpha, model_mask(face_mask, person_mask))))
        return results


def sharpened(image: np.ndarray) -> np.ndarray:
    """The unsharp mask the crop gets before the model (uint8, rounded and clipped)."""
    blurred = cv2.GaussianBlur(image, (0, 0), SHARPEN_SIGMA)
    return cv2.addWeighted(image, 1.0 + SHARPEN_AMOUNT, blurred, -SHARPEN_AMOUNT, 0)


def to_rgb8(person: np.ndarray) -> np.ndarray:
    """The model's face (H, W, 3 BGR in 0..1) as RGB uint8, scaled by 255 and truncated as FaceFusion does."""
    return np.clip(person * 255.0, 0, 255).astype(np.uint8)[..., ::-1].copy()


def model_mask(face_mask: np.ndarray, person_mask: np.ndarray) -> np.ndarray:
    """The model's paste-back mask (H, W float32 in 0..1) from its two mask outputs (H, W, 1)."""
    side, passes = MASK_ERODE
    mask = np.minimum(face_mask, person_mask).reshape(face_mask.shape[:2]).clip(0, 1).astype(np.float32)
    mask = cv2.erode(mask, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (side, side)), iterations=passes)
    return cv2.GaussianBlur(mask, (0, 0), MASK_SIGMA)

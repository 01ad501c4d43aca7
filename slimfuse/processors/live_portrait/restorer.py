"""The expression restorer as a FaceProcessor: the target's own expression, read from the face as it came into the
chain (`FaceCrop.original`), brought back onto the face the stages before made (a swapper that carries the
source's expression over, an enhancer that smooths it).

crop: the face aligned to arcface_128 at 512 px. process, per face: the appearance features and motion of the
current face, the expression of the original; the wanted expression is the original's for the keypoints of the
areas asked for (`--expression-restorer-areas`), the current face's for the others, mixed at the factor (0-100 as
0-1.2) with the current one and kept within LivePortrait's expression range; the generator redraws the current face
with its keypoints so moved. The alpha: the enhancer's masks (the box with the blur and no padding, the occlusion
mask when selected), as FaceFusion has it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from slimfuse.config import ExpressionRestorerOptions
from slimfuse.faces.types import Face
from slimfuse.models.neural import live_portrait as lp
from slimfuse.models.pool import ModelPool
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto, aligned_crop
from slimfuse.processors.live_portrait.motion import limit_expression
from slimfuse.processors.live_portrait.network import LivePortrait
from slimfuse.processors.paste_masks import FaceMasker

TEMPLATE = "arcface_128"
AREA_POINTS = {"upper-face": (1, 2, 6, 10, 11, 12, 13, 15, 16), "lower-face": (3, 7, 14, 17, 18, 19, 20)}
"""The keypoints of each area (FaceFusion's); the others (0, 4, 5, 8, 9) always keep the current face's."""
FACTOR_SCALE = 1.2
"""The factor's 100 as a share of the original's expression."""


class ExpressionRestorer:
    reads_original: ClassVar[bool] = True

    def __init__(self, pool: ModelPool, options: ExpressionRestorerOptions, masker: FaceMasker) -> None:
        """masker: the run's, as the enhancer takes it (`FaceMasker.for_enhancer`)."""
        self.network = LivePortrait(pool, lp.RESTORER_MODELS[options.expression_restorer_model])
        self.share = FACTOR_SCALE / 100 * options.expression_restorer_factor
        self.points = tuple(sorted(point for area in options.expression_restorer_areas for point in AREA_POINTS[area]))
        self.masker = masker
        self.preparation_models: tuple[str, ...] = ()
        self.generator_models: tuple[str, ...] = (lp.GENERATOR,)

    def prepare(self, sources: Sequence[SourcePhoto]) -> None:
        self.network.load()
        self.masker.load()

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return aligned_crop(frame, face, TEMPLATE, lp.CROP_SIZE)

    def process(self, crops: Sequence[FaceCrop], prepared: None) -> list[Processed]:
        if not crops:
            return []
        images = [self.restore(crop.image, crop.image if crop.original is None else crop.original) for crop in crops]
        return [Processed(image=image, alpha=alpha) for image, alpha in zip(images, self.masker.masks(crops),
                                                                             strict=True)]

    def restore(self, current: np.ndarray, original: np.ndarray) -> np.ndarray:
        """`current` (a 512 px crop) redrawn with `original`'s expression, as the options say."""
        current_input = self.network.model_input(current)
        features = self.network.features(current_input)
        target = self.network.motion(self.network.model_input(original)).expression
        motion = self.network.motion(current_input)
        wanted = self.wanted_expression(motion.expression, target)
        return self.network.generate(features, motion.posed(wanted), motion.posed())

    def wanted_expression(self, current: np.ndarray, original: np.ndarray) -> np.ndarray:
        """The original's expression at the areas' keypoints (the current one's elsewhere), mixed with the current
        one at the factor, within LivePortrait's range."""
        chosen = current.copy()
        chosen[:, list(self.points)] = original[:, list(self.points)]
        return limit_expression(chosen * np.float32(self.share) + current * np.float32(1 - self.share))

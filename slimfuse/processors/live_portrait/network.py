"""The live_portrait model set on the run's pool: a 512 px face crop in, its appearance features and motion out,
and the face redrawn from its features with its keypoints moved."""
from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from slimfuse.models.neural import live_portrait as lp
from slimfuse.models.pool import ModelPool
from slimfuse.models.tensors import to_images, to_tensor
from slimfuse.processors.live_portrait.motion import Motion


class LivePortrait:
    """The sessions of `models` (catalog names of the live_portrait set), taken from the pool as they are used."""

    def __init__(self, pool: ModelPool, models: Sequence[str]) -> None:
        self.pool = pool
        self.models = tuple(models)

    def load(self) -> None:
        """Load (and check) every model of the set, before any face is worked on."""
        for name in self.models:
            self.pool.session(name)

    @staticmethod
    def model_input(crop: np.ndarray) -> np.ndarray:
        """A 512 px RGB crop as the extractors' input: halved with area interpolation, RGB / 255, [1, 3, 256, 256]."""
        half = cv2.resize(crop, (lp.INPUT_SIZE, lp.INPUT_SIZE), interpolation=cv2.INTER_AREA)
        return to_tensor(half)

    def features(self, model_input: np.ndarray) -> np.ndarray:
        return self._run(lp.FEATURE_EXTRACTOR, {lp.IMAGE_INPUT: model_input})[0]

    def motion(self, model_input: np.ndarray) -> Motion:
        return Motion.of(self._run(lp.MOTION_EXTRACTOR, {lp.IMAGE_INPUT: model_input}))

    def generate(self, features: np.ndarray, wanted: np.ndarray, own: np.ndarray) -> np.ndarray:
        """The face (RGB uint8, 512 px) redrawn from its `features` with its keypoints moved from `own` to
        `wanted`."""
        output = self._run(lp.GENERATOR, {lp.VOLUME_INPUT: features, lp.SOURCE_INPUT: wanted, lp.TARGET_INPUT: own})
        return to_images(output[0][:1])[0]

    def stitch(self, wanted: np.ndarray, own: np.ndarray) -> np.ndarray:
        return np.asarray(self._run(lp.STITCHER, {lp.SOURCE_INPUT: wanted, lp.TARGET_INPUT: own})[0], np.float32)

    def retarget(self, model: str, own: np.ndarray, ratios: Sequence[float]) -> np.ndarray:
        """The keypoints' change [1, 21, 3] the eye or lip retargeter gives for the face's `own` keypoints and the
        open `ratios` (the face's, then the one wanted)."""
        row = np.concatenate([np.ravel(own), np.asarray(ratios, dtype=np.float64)])[None].astype(np.float32)
        return np.asarray(self._run(model, {lp.RETARGET_INPUT: row})[0], np.float32).reshape(1, lp.POINTS, 3)

    def _run(self, model: str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return list(self.pool.session(model).run(None, feeds))

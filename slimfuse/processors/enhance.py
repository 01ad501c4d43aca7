"""The neural face enhancers (GFPGAN, CodeFormer, GPEN, RestoreFormer++) as a FaceProcessor.

crop: the face aligned to the model's template at the model's size. process: all crops of a frame in batches where
the model's batch axis allows; CodeFormer also gets its fidelity `weight`. The alpha is the run's face masks
(`FaceMasker.for_enhancer`: by default the crop's blurred box) times the blend (0-100: how much of the enhanced
face replaces the face). Sessions come from the pool.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from slimfuse.config import EnhanceOptions
from slimfuse.faces.types import Face
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.neural.enhancers import ENHANCER_INPUT, WEIGHT_INPUT
from slimfuse.models.pool import ModelPool
from slimfuse.models.tensors import to_images, to_tensor
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto, aligned_crop
from slimfuse.processors.paste_masks import FaceMasker


class EnhanceProcessor:
    def __init__(self, pool: ModelPool, options: EnhanceOptions, masker: FaceMasker, batcher: AdaptiveBatcher) -> None:
        """options: the run's (the model, its blend 0-100 and CodeFormer's fidelity weight); masker: the enhancer's
        face masks; batcher: the run's batch sizes and out-of-memory back-off."""
        model = options.face_enhancer_model
        self.io, self.template, self.size = pool.store.catalog.get(model).aligned_face_io("enhancer", "a face enhancer")
        self.pool = pool
        self.model = model
        self.blend = options.face_enhancer_blend
        self.weight = options.face_enhancer_weight
        self.masker = masker
        self.batcher = batcher
        self.preparation_models: tuple[str, ...] = ()
        self.generator_models: tuple[str, ...] = (model,)

    def prepare(self, sources: Sequence[SourcePhoto]) -> None:
        self.pool.session(self.model)  # load (and check) the enhancer and its mask models before any work for them
        self.masker.load()

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return aligned_crop(frame, face, self.template, self.size)

    def process(self, crops: Sequence[FaceCrop], prepared: None) -> list[Processed]:
        if not crops:
            return []
        session = self.pool.session(self.model)
        shared = {}
        if any(arg.name == WEIGHT_INPUT for arg in session.get_inputs()):
            shared[WEIGHT_INPUT] = np.array([self.weight], dtype=np.float64)
        tensor = to_tensor([crop.image for crop in crops], self.io.mean, self.io.std)
        images = to_images(self.batcher.run(self.model, {ENHANCER_INPUT: tensor}, shared), self.io.output_range)
        share = np.float32(self.blend / 100.0)
        return [Processed(image=image, alpha=alpha * share)
                for image, alpha in zip(images, self.masker.masks(crops), strict=True)]

"""The age modifier (`--processors age_modifier`, fran or styleganex_age) as a FaceProcessor, as FaceFusion's.

- fran: crop: the face aligned to ffhq_512 at 1024 px. process: the model gets the crop (RGB / 255) and its
  direction, the face's age and the age wanted (/ 100, clipped to [0, 1]); the face's age is the middle of the
  fairface classifier's age group (`FairfaceAges`) of the face as it came into the chain (the processor
  `reads_original`), the age wanted adds --age-modifier-direction years.
- styleganex_age: crop: the face with its surroundings (`SurroundedCrop`: the five points drawn 0.875 times closer
  around the nose tip, aligned to styleganex_384) at the paste size, 1024 px, and, cut from the frame as well, the
  model's two inputs: the face aligned to ffhq_512 at 256 px and the surroundings at 384 px. process: the model's
  output (4 x 384 px) is area-averaged to 1024 px and given the surroundings' colours back (`match_colours`); its
  direction is --age-modifier-direction -100..100 mapped onto 2.5..-2.5.
The alpha is the run's face masks as the face enhancer has them (FaceMasker.for_enhancer: the box with the blur
and no padding, and the occluder when selected) on the crop that is pasted; for styleganex_age the box is drawn on
the 384 px surroundings and the occluder run on the 256 px face, both brought to the paste crop as FaceFusion does.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from slimfuse.config import AgeModifierOptions
from slimfuse.faces.align import align_matrix, five_points, landmarks_in_crop, warp_to_crop
from slimfuse.faces.classify import FaceClassifier
from slimfuse.faces.types import Face
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.neural.age_modifiers import (BACKGROUND_INPUT, BACKGROUND_POINTS_SCALE, BACKGROUND_SIZE,
                                                  BACKGROUND_TEMPLATE, DIRECTION_INPUT, FRAN, NEEDS_AGE,
                                                  STYLEGANEX_DIRECTION, STYLEGANEX_PASTE_SIZE, TARGET_INPUT)
from slimfuse.models.neural.classifiers import FAIRFACE
from slimfuse.models.pool import ModelPool
from slimfuse.models.tensors import to_images, to_tensor
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto
from slimfuse.processors.color import match_colours
from slimfuse.processors.paste_masks import FaceMasker

AgeReader = Callable[[Sequence[FaceCrop]], list[float]]
"""The age of the face in each crop, in years (fran's starting point)."""


@dataclass(frozen=True, kw_only=True)
class SurroundedCrop(FaceCrop):
    """styleganex_age's crop: the face with its surroundings at the paste size (`image`), and the model's two
    inputs cut from the frame: the aligned face and the surroundings at the model's sizes, with their affines."""

    face: np.ndarray = field(repr=False)
    face_from_frame: np.ndarray
    surroundings: np.ndarray = field(repr=False)
    surroundings_from_frame: np.ndarray


class FairfaceAges:
    """The middle of the fairface classifier's age group of each face (FaceFusion's mean of the group's range), read
    off the face as it came into the chain (`FaceCrop.original`, as FaceFusion reads the target's age before any
    processor), else off the crop itself."""

    def __init__(self, pool: ModelPool) -> None:
        self.classifier = FaceClassifier(pool, FAIRFACE)

    def __call__(self, crops: Sequence[FaceCrop]) -> list[float]:
        return [float(np.mean(self.classifier.classify_at(crop.image if crop.original is None else crop.original,
                                                          five_points(crop.landmarks)).age))
                for crop in crops]


def fran_direction(age: float, years: int) -> np.ndarray:
    """fran's `direction`: the face's age and the age wanted, / 100, in [0, 1]."""
    return np.clip(np.array([age, age + years], dtype=np.float32) / np.float32(100), 0, 1)


def styleganex_direction(direction: int) -> np.ndarray:
    """styleganex_age's `direction`: a scalar, -100..100 mapped onto 2.5..-2.5."""
    return np.array(np.interp(direction, [-100, 100], STYLEGANEX_DIRECTION), dtype=np.float32)


class AgeModifierProcessor:
    def __init__(self, pool: ModelPool, options: AgeModifierOptions, masker: FaceMasker, batcher: AdaptiveBatcher,
                 ages: AgeReader | None = None) -> None:
        """masker: the enhancer's face masks (`FaceMasker.for_enhancer`); ages: each face's age for fran (by
        default the fairface classifier's, `FairfaceAges`)."""
        model = options.age_modifier_model
        self.io, self.template, self.size = pool.store.catalog.get(model).aligned_face_io("age_modifier",
                                                                                        "an age modifier")
        self.pool = pool
        self.model = model
        self.direction = options.age_modifier_direction
        self.masker = masker
        self.batcher = batcher
        self.needs_age = NEEDS_AGE[model]
        self.reads_original = self.needs_age  # fran reads the face's age off the face before the chain changed it
        self._ages = ages
        self.preparation_models: tuple[str, ...] = ()
        self.generator_models: tuple[str, ...] = (model,)

    @staticmethod
    def models_for(model: str) -> tuple[str, ...]:
        """The catalog models the age modifier runs with `model` (besides the face masks')."""
        return (model, FAIRFACE) if NEEDS_AGE[model] else (model,)

    def prepare(self, sources: Sequence[SourcePhoto]) -> None:
        self.pool.session(self.model)  # load (and check) the model, the classifier and the masks before any work
        if self.needs_age and self._ages is None:
            self._ages = FairfaceAges(self.pool)
            self.pool.session(FAIRFACE)
        self.masker.load()

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        if face.landmarks is None:
            raise ValueError("the face has no landmarks")
        points = five_points(face.landmarks)
        face_from_frame = align_matrix(points, self.template, self.size)
        if self.model == FRAN:
            return FaceCrop(image=warp_to_crop(frame, face_from_frame, self.size),
                            landmarks=landmarks_in_crop(face.landmarks, face_from_frame), crop_from_frame=face_from_frame)
        nose = points[2]
        surroundings_from_frame = align_matrix(nose + (points - nose) * BACKGROUND_POINTS_SCALE, BACKGROUND_TEMPLATE,
                                               BACKGROUND_SIZE)
        paste_from_frame = surroundings_from_frame * (STYLEGANEX_PASTE_SIZE / BACKGROUND_SIZE)
        return SurroundedCrop(
            image=warp_to_crop(frame, paste_from_frame, STYLEGANEX_PASTE_SIZE),
            landmarks=landmarks_in_crop(face.landmarks, paste_from_frame), crop_from_frame=paste_from_frame,
            face=warp_to_crop(frame, face_from_frame, self.size), face_from_frame=face_from_frame,
            surroundings=warp_to_crop(frame, surroundings_from_frame, BACKGROUND_SIZE),
            surroundings_from_frame=surroundings_from_frame)

    def process(self, crops: Sequence[FaceCrop], prepared: None) -> list[Processed]:
        if not crops:
            return []
        if self.model == FRAN:
            images = self._fran(crops)
            masks = self.masker.masks(crops)
        else:
            surrounded = [_surrounded(crop) for crop in crops]
            images = self._styleganex(surrounded)
            masks = self._surroundings_masks(surrounded)
        return [Processed(image=image, alpha=alpha) for image, alpha in zip(images, masks, strict=True)]

    def _fran(self, crops: Sequence[FaceCrop]) -> list[np.ndarray]:
        if self._ages is None:
            raise RuntimeError("the age modifier was not prepared")
        outputs = []  # one face a call: each has its own direction, which has no batch axis
        for crop, age in zip(crops, self._ages(crops), strict=True):
            tensor = to_tensor([crop.image], self.io.mean, self.io.std)
            direction = fran_direction(age, self.direction)
            outputs.append(self.batcher.run(self.model, {TARGET_INPUT: tensor}, {DIRECTION_INPUT: direction}))
        return list(to_images(np.concatenate(outputs), self.io.output_range))

    def _styleganex(self, crops: Sequence[SurroundedCrop]) -> list[np.ndarray]:
        direction = styleganex_direction(self.direction)  # a scalar: one face a call, as it has no batch axis
        output = np.concatenate([self.batcher.run(self.model, {
            TARGET_INPUT: to_tensor([crop.face], self.io.mean, self.io.std),
            BACKGROUND_INPUT: to_tensor([crop.surroundings], self.io.mean, self.io.std)}, {DIRECTION_INPUT: direction})
            for crop in crops])
        paste = (STYLEGANEX_PASTE_SIZE, STYLEGANEX_PASTE_SIZE)
        return [match_colours(crop.surroundings, cv2.resize(image, paste, interpolation=cv2.INTER_AREA))
                for crop, image in zip(crops, to_images(output, self.io.output_range), strict=True)]

    def _surroundings_masks(self, crops: Sequence[SurroundedCrop]) -> list[np.ndarray]:
        """The box on the 384 px surroundings (and the occluder's mask of the 256 px face, moved onto them), brought
        to the paste crop."""
        boxes = self.masker.only("box")
        occluder = self.masker.only("occlusion")
        side = (STYLEGANEX_PASTE_SIZE, STYLEGANEX_PASTE_SIZE)
        masks = [np.ones((BACKGROUND_SIZE, BACKGROUND_SIZE), np.float32) for _ in crops]
        if boxes is not None:
            masks = boxes.masks([_recut(crop, crop.surroundings, crop.surroundings_from_frame) for crop in crops])
        if occluder is not None:
            faces = [_recut(crop, crop.face, crop.face_from_frame) for crop in crops]
            for index, (crop, occlusion) in enumerate(zip(crops, occluder.masks(faces), strict=True)):
                onto = _compose(crop.surroundings_from_frame, cv2.invertAffineTransform(crop.face_from_frame))
                moved = cv2.warpAffine(occlusion, onto, (BACKGROUND_SIZE, BACKGROUND_SIZE))
                masks[index] = np.minimum(masks[index], moved)
        return [cv2.resize(np.clip(mask, 0, 1), side) for mask in masks]


def _surrounded(crop: FaceCrop) -> SurroundedCrop:
    if not isinstance(crop, SurroundedCrop):
        raise TypeError("styleganex_age works on the crops its own `crop` cuts")
    return crop


def _recut(crop: FaceCrop, image: np.ndarray, from_frame: np.ndarray) -> FaceCrop:
    """Another cut of the same face (`image`, cut by `from_frame`), its mesh moved there from `crop`."""
    from_crop = _compose(from_frame, cv2.invertAffineTransform(crop.crop_from_frame))
    return FaceCrop(image, landmarks_in_crop(crop.landmarks, from_crop), from_frame)


def _compose(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """The 2x3 affine of `inner` followed by `outer`."""
    return (np.vstack([outer, [0, 0, 1]]) @ np.vstack([inner, [0, 0, 1]]))[:2]

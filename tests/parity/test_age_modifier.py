"""Parity with FaceFusion 3.8.1's age modifier, fran and styleganex_age, stage by stage (the recorded stages:
tools/facefusion_reference/record_age_modifier.py, --age-modifier-direction 30).

slimfuse's AgeModifierProcessor runs the parity stand-ins, loaded through a store, with the enhancer's mask (the
box, blur 0.3, no padding) and the recorded face's age (FaceFusion's face carries the age group range(20, 30);
slimfuse reads it from the fairface classifier, which is compared on its own). The crops are compared with
FaceFusion's; the model stage is given slimfuse's own 1024 px crop for fran (FaceFusion's is stored at every 4th
pixel only; the crop test shows the two agree) and FaceFusion's own 256 px face and 384 px surroundings for
styleganex_age.

Two differences are deliberate: the box mask loses FaceFusion's seam along the crop's border (as the face
enhancer's, see test_enhancers.py), and styleganex_age's output is rounded to whole levels where FaceFusion
truncates it before the 1024 px resize and the colour match.
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from parity import standins
from parity.faces import mesh_face
from parity.reference import MAX_PIXELS, Figures, mask_float, recorded, standin_pool
from processor_parts import box_masker
from slimfuse.config import AgeModifierOptions
from slimfuse.faces.align import transform_points
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.age_modify import (AgeModifierProcessor, SurroundedCrop, fran_direction,
                                            styleganex_direction)
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.blend import paste_back

AREA = "age_modifier"
MODELS = tuple(contract.name for contract in standins.AGE_MODIFIERS)
DIRECTION = 30
STRIDE = 4


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return standin_pool(tmp_path_factory.mktemp("parity_age_modifier"), store, MODELS)


def modifier(pool: ModelPool, model: str) -> AgeModifierProcessor:
    """The processor as a run builds it (the enhancer's masker), told the recorded face's age."""
    age = float(recorded(AREA, model)["age"])
    return AgeModifierProcessor(pool, AgeModifierOptions(age_modifier_model=model, age_modifier_direction=DIRECTION),
                                box_masker(pool).for_enhancer(), AdaptiveBatcher(pool), ages=lambda crops: [age] * len(crops))


def assert_same_crop(mine: np.ndarray, theirs: np.ndarray, size: int) -> None:
    """The two crop-from-frame affines put the crop's corners within MAX_PIXELS of each other."""
    corners = np.array([[0, 0], [size, 0], [size, size], [0, size]], dtype=np.float64)
    in_frame = transform_points(cv2.invertAffineTransform(theirs), corners)
    assert np.abs(transform_points(mine, in_frame) - corners).max() <= MAX_PIXELS


def facefusion_input(processor: AgeModifierProcessor, astronaut: np.ndarray) -> FaceCrop:
    """What the model stage is given: slimfuse's crop, with styleganex_age's inputs replaced by FaceFusion's."""
    own = processor.crop(astronaut, mesh_face("target"))
    if not isinstance(own, SurroundedCrop):
        return own
    reference = recorded(AREA, processor.model)
    return SurroundedCrop(image=own.image, landmarks=own.landmarks, crop_from_frame=own.crop_from_frame,
                          face=reference["face"], face_from_frame=reference["face_matrix"],
                          surroundings=reference["surroundings"], surroundings_from_frame=reference["surroundings_matrix"])


def test_fran_crop(parity_pool: ModelPool, astronaut: np.ndarray, figures: Figures) -> None:
    reference = recorded(AREA, "fran")
    crop = modifier(parity_pool, "fran").crop(astronaut, mesh_face("target"))
    assert crop.image.shape == (1024, 1024, 3)
    assert_same_crop(crop.crop_from_frame, reference["matrix"], 1024)
    figures.image(AREA, "fran", f"aligned crop (every {STRIDE}th pixel)", crop.image[::STRIDE, ::STRIDE],
                  reference["crop"])


def test_styleganex_crops(parity_pool: ModelPool, astronaut: np.ndarray, figures: Figures) -> None:
    """The 256 px face, the 384 px surroundings (points drawn 0.875 times closer), and the 1024 px paste crop:
    the surroundings at FaceFusion's paste size."""
    reference = recorded(AREA, "styleganex_age")
    crop = modifier(parity_pool, "styleganex_age").crop(astronaut, mesh_face("target"))
    assert isinstance(crop, SurroundedCrop) and crop.image.shape == (1024, 1024, 3)
    assert_same_crop(crop.face_from_frame, reference["face_matrix"], 256)
    assert_same_crop(crop.surroundings_from_frame, reference["surroundings_matrix"], 384)
    assert_same_crop(crop.crop_from_frame, reference["surroundings_matrix"] * (1024 / 384), 1024)
    figures.image(AREA, "styleganex_age", "aligned face (256 px)", crop.face, reference["face"])
    figures.image(AREA, "styleganex_age", "surroundings (384 px)", crop.surroundings, reference["surroundings"])


def test_directions() -> None:
    age = float(recorded(AREA, "fran")["age"])
    np.testing.assert_array_equal(fran_direction(age, DIRECTION), recorded(AREA, "fran")["direction"])
    np.testing.assert_array_equal(styleganex_direction(DIRECTION), recorded(AREA, "styleganex_age")["direction"])
    assert styleganex_direction(DIRECTION).shape == () and fran_direction(age, DIRECTION).shape == (2,)
    np.testing.assert_allclose(fran_direction(90.0, 30), [0.9, 1.0])  # clipped to [0, 1] as FaceFusion's


@pytest.mark.parametrize("model", MODELS)
def test_model_output(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    processor = modifier(parity_pool, model)
    output = processor.process([facefusion_input(processor, astronaut)], None)[0].image
    assert output.shape == (1024, 1024, 3)
    stage = "output (every 4th pixel)" if model == "fran" else "output at 1024 px, colours matched (every 4th pixel)"
    figures.image(AREA, model, stage, output[::STRIDE, ::STRIDE], recorded(AREA, model)["output"])


def test_direction_moves_the_output(parity_pool: ModelPool, astronaut: np.ndarray) -> None:
    for model in MODELS:
        processor = modifier(parity_pool, model)
        crop = facefusion_input(processor, astronaut)
        older = processor.process([crop], None)[0].image.astype(int)
        processor.direction = -60
        assert np.abs(processor.process([crop], None)[0].image - older).mean() > 3


@pytest.mark.parametrize("model", MODELS)
def test_paste_mask(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    """FaceFusion's box (on the 1024 px crop for fran, on the 384 px surroundings brought to 1024 px for
    styleganex_age), lowered by its border value as slimfuse's box is."""
    processor = modifier(parity_pool, model)
    alpha = processor.process([facefusion_input(processor, astronaut)], None)[0].alpha
    theirs = mask_float(recorded(AREA, model)["box_mask"])
    border = max(theirs[0].max(), theirs[-1].max(), theirs[:, 0].max(), theirs[:, -1].max())
    assert 0.03 < border < 0.08
    lowered = np.clip((theirs - border) / (1 - border), 0, 1)
    if lowered.shape != alpha.shape:
        lowered = cv2.resize(lowered, alpha.shape[::-1])
    figures.image(AREA, model, "paste mask (FaceFusion's lowered by its border)", alpha * 255, lowered * 255)


@pytest.mark.parametrize("model", MODELS)
def test_end_to_end(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    """slimfuse's own stages (crop, process, paste) against FaceFusion's modify_age where FaceFusion's mask is whole;
    outside the paste area neither changes the frame."""
    reference = recorded(AREA, model)
    processor = modifier(parity_pool, model)
    crop = processor.crop(astronaut, mesh_face("target"))
    result = processor.process([crop], None)[0]
    frame = paste_back(astronaut, result.image, result.alpha, crop.crop_from_frame)
    x1, y1, x2, y2 = (int(value) for value in reference["paste_box"])
    whole = (mask_float(reference["box_mask"]) == 1).astype(np.float32)
    whole = cv2.resize(whole, (1024, 1024), interpolation=cv2.INTER_NEAREST)
    box_from_crop = np.vstack([crop.crop_from_frame, [0, 0, 1]]) @ np.array([[1, 0, x1], [0, 1, y1], [0, 0, 1]])
    inside = cv2.warpAffine(whole, box_from_crop[:2], (x2 - x1, y2 - y1),
                            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP) == 1
    assert inside.mean() > 0.2
    figures.image(AREA, model, "whole modification where FaceFusion's mask is 1 (slimfuse's stages chained)",
                  frame[y1:y2, x1:x2][inside], reference["frame"][inside])
    outside = np.ones(astronaut.shape[:2], dtype=bool)
    outside[y1:y2, x1:x2] = False
    assert np.array_equal(frame[outside], astronaut[outside])

"""The age modifier (--processors age_modifier) on the packaged astronaut, with the parity stand-ins of fran and
styleganex_age: fran's starting age comes from the fairface classifier, read off the face as it came into the chain;
styleganex_age's occlusion mask is the 256 px face's, moved onto its surroundings; a run needs no source photo and
changes the face only."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

import neural_models as nm
from parity.faces import mesh_face
from parity.reference import standin_pool
from processor_parts import box_masker
from scenes import swap_file
from slimfuse.config import AgeModifierOptions, MaskOptions
from slimfuse.faces.align import transform_points
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.age_modify import AgeModifierProcessor, FairfaceAges, SurroundedCrop
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.paste_masks import FaceMasker

MODELS = ("fran", "styleganex_age")


@pytest.fixture(scope="module")
def age_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("age_modifier")
    nm.save(nm.fairface_by_tint(), root / "placed", "fairface")
    visible = np.zeros((256, 256), np.float32)
    visible[:, :128] = 1  # the occluder sees the crop's right half covered
    nm.save(nm.occluder("xseg_1", visible=visible), root / "placed", "xseg_1")
    return standin_pool(root, store, MODELS)


def modifier(pool: ModelPool, model: str, masker: FaceMasker | None = None, direction: int = 40
             ) -> AgeModifierProcessor:
    masker = masker or box_masker(pool).for_enhancer()
    processor = AgeModifierProcessor(pool, AgeModifierOptions(age_modifier_model=model,
                                                              age_modifier_direction=direction),
                                     masker, AdaptiveBatcher(pool))
    processor.prepare(())
    return processor


def test_fran_starts_from_fairfaces_age_of_the_face_before_the_chain(age_pool: ModelPool,
                                                                     astronaut: np.ndarray) -> None:
    """The fairface stand-in takes a redder face for 20-28 (24 years), a bluer one for 60-68 (64 years); fran
    reads the original face when the chain gives it, and its output follows the age it reads."""
    processor = modifier(age_pool, "fran")
    assert processor.reads_original and processor.models_for("fran") == ("fran", "fairface")
    crop = processor.crop(astronaut, mesh_face("target"))
    bluer = np.ascontiguousarray(crop.image[..., ::-1])
    ages = FairfaceAges(age_pool)
    assert ages([crop]) == [24.0]
    assert ages([FaceCrop(bluer, crop.landmarks, crop.crop_from_frame)]) == [64.0]
    assert ages([FaceCrop(bluer, crop.landmarks, crop.crop_from_frame, original=crop.image)]) == [24.0]
    told = AgeModifierProcessor(age_pool, AgeModifierOptions(age_modifier_direction=40), box_masker(age_pool),
                                AdaptiveBatcher(age_pool), ages=lambda crops: [24.0] * len(crops))
    assert np.array_equal(processor.process([crop], None)[0].image, told.process([crop], None)[0].image)
    older = AgeModifierProcessor(age_pool, AgeModifierOptions(age_modifier_direction=40), box_masker(age_pool),
                                 AdaptiveBatcher(age_pool), ages=lambda crops: [64.0] * len(crops))
    assert np.abs(older.process([crop], None)[0].image.astype(int) - told.process([crop], None)[0].image).mean() > 1


def test_styleganex_reads_occlusion_off_the_face_crop(age_pool: ModelPool, astronaut: np.ndarray) -> None:
    """With the occluder selected, the part of the face its 256 px crop has covered is kept out of the paste."""
    masks = MaskOptions(face_mask_types=("box", "occlusion"))
    processor = modifier(age_pool, "styleganex_age", FaceMasker(age_pool, masks, None).for_enhancer())
    assert not processor.reads_original and processor.models_for("styleganex_age") == ("styleganex_age",)
    crop = processor.crop(astronaut, mesh_face("target"))
    assert isinstance(crop, SurroundedCrop)
    alpha = processor.process([crop], None)[0].alpha
    paste_from_face = np.vstack([crop.crop_from_frame, [0, 0, 1]]) @ np.vstack(
        [cv2.invertAffineTransform(crop.face_from_frame), [0, 0, 1]])
    left, right = np.rint(transform_points(paste_from_face[:2], np.array([[64.0, 128.0], [192.0, 128.0]]))).astype(int)
    assert alpha[left[1], left[0]] > 0.9 and alpha[right[1], right[0]] < 0.05
    plain = modifier(age_pool, "styleganex_age").process([crop], None)[0].alpha
    assert plain[right[1], right[0]] > 0.9


def test_styleganex_works_on_its_own_crops_only(age_pool: ModelPool, astronaut: np.ndarray) -> None:
    processor = modifier(age_pool, "styleganex_age")
    crop = processor.crop(astronaut, mesh_face("target"))
    with pytest.raises(TypeError, match="its own `crop`"):
        processor.process([FaceCrop(crop.image, crop.landmarks, crop.crop_from_frame)], None)


@pytest.mark.parametrize("model", MODELS)
def test_a_run_changes_the_face_only_and_needs_no_source(models_dir: Path, astronaut_path: Path,
                                                         astronaut: np.ndarray, tmp_path: Path, model: str) -> None:
    from parity import standins

    standins.write(model, models_dir)
    nm.save(nm.fairface_by_tint(), models_dir, "fairface")
    out = swap_file([], astronaut_path, tmp_path / "out.png", processors=("age_modifier",),
                    age_modifier_model=model, age_modifier_direction=-30, models_dir=models_dir)
    result = cv2.cvtColor(cv2.imread(str(out)), cv2.COLOR_BGR2RGB).astype(int)
    x0, y0, x1, y1 = (int(value) for value in mesh_face("target").box)
    assert np.abs(result[y0:y1, x0:x1] - astronaut[y0:y1, x0:x1]).mean() > 5
    assert np.array_equal(result[-40:, :], astronaut[-40:, :])  # the bottom of the photo, far from the face


@pytest.mark.parametrize("model", MODELS)
def test_several_faces_of_a_batch_each_get_their_own_result(age_pool: ModelPool, astronaut: np.ndarray,
                                                             model: str) -> None:
    """One face a call (the direction has no batch axis), results in the crops' order."""
    processor = modifier(age_pool, model)
    crop = processor.crop(astronaut, mesh_face("target"))
    mirrored = processor.crop(np.ascontiguousarray(astronaut[:, ::-1]), mesh_face("target"))
    both = processor.process([crop, mirrored], None)
    assert np.array_equal(both[0].image, processor.process([crop], None)[0].image)
    assert np.array_equal(both[1].image, processor.process([mirrored], None)[0].image)
    assert not np.array_equal(both[0].image, both[1].image)

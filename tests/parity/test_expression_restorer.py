"""Parity with FaceFusion 3.8.1's expression restorer on the live_portrait stand-ins, stage by stage (the recorded
stages: tools/facefusion_reference/record_expression_restorer.py).

The frame as it came in is the astronaut; the frame the stages before made is `standins.worked_on` of it. Each stage
is given FaceFusion's recorded input: the crops are compared with FaceFusion's, the generator's output is computed
from FaceFusion's crops for three settings (factor and areas), the paste from FaceFusion's mask.

Deliberate differences: the box mask (as for the enhancers, slimfuse lowers FaceFusion's faint seam along the
crop's border, so the end-to-end test compares where both masks are whole), and the generator's output is rounded
to the nearest level where FaceFusion truncates (half a level darker on average).
"""
from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from parity import standins
from parity.faces import mesh_face
from parity.reference import MAX_PIXELS, Figures, compare_where_masks_whole, paste_box, mask_float, recorded, standin_pool
from processor_parts import box_masker
from slimfuse.config import ExpressionRestorerOptions
from slimfuse.faces.align import transform_points
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.blend import paste_back
from slimfuse.processors.live_portrait.restorer import ExpressionRestorer

AREA = "expression_restorer"
MODEL = "live_portrait"
MODELS = ("live_portrait_feature_extractor", "live_portrait_motion_extractor", "live_portrait_generator")
STRIDE = 2
SETTINGS = {"80_both": (80, ("upper-face", "lower-face")), "100_upper": (100, ("upper-face",)),
            "30_lower": (30, ("lower-face",))}


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return standin_pool(tmp_path_factory.mktemp("parity_expression_restorer"), store, MODELS)


def restorer(pool: ModelPool, factor: int = 80, areas: tuple[str, ...] = SETTINGS["80_both"][1]) -> ExpressionRestorer:
    """The processor as a run builds it: the enhancer's masker (the box, no padding)."""
    options = replace(ExpressionRestorerOptions(), expression_restorer_factor=factor, expression_restorer_areas=areas)
    return ExpressionRestorer(pool, options, box_masker(pool).for_enhancer())



def test_crops(parity_pool: ModelPool, astronaut: np.ndarray, figures: Figures) -> None:
    reference = recorded(AREA, MODEL)
    processor = restorer(parity_pool)
    corners = np.array([[0, 0], [512, 0], [512, 512], [0, 512]], dtype=np.float64)
    for key, frame in (("original", astronaut), ("current", standins.worked_on(astronaut))):
        crop = processor.crop(frame, mesh_face("target"))
        in_frame = transform_points(cv2.invertAffineTransform(reference["matrix"]), corners)
        assert np.abs(transform_points(crop.crop_from_frame, in_frame) - corners).max() <= MAX_PIXELS
        figures.image(AREA, MODEL, f"{key} crop (arcface_128, 512 px)", crop.image, reference[key])


@pytest.mark.parametrize("setting", SETTINGS)
def test_model_output(parity_pool: ModelPool, setting: str, figures: Figures) -> None:
    reference = recorded(AREA, MODEL)
    output = restorer(parity_pool, *SETTINGS[setting]).restore(reference["current"], reference["original"])
    factor, areas = SETTINGS[setting]
    figures.image(AREA, MODEL, f"restored crop, factor {factor}, {' and '.join(areas)} (every {STRIDE}nd pixel)",
                  output[::STRIDE, ::STRIDE], reference[f"output_{setting}"])


def test_the_settings_move_the_output() -> None:
    """The stand-ins see the factor and the areas, so the comparisons above are of three different outputs."""
    reference = recorded(AREA, MODEL)
    outputs = [reference[f"output_{setting}"].astype(int) for setting in SETTINGS]
    for index, output in enumerate(outputs):
        for other in outputs[index + 1:]:
            assert np.abs(output - other).mean() > 2


def test_paste(parity_pool: ModelPool, astronaut: np.ndarray, figures: Figures) -> None:
    reference = recorded(AREA, MODEL)
    output = restorer(parity_pool).restore(reference["current"], reference["original"])
    frame = paste_back(standins.worked_on(astronaut), output, mask_float(reference["box_mask"]), reference["matrix"])
    figures.image(AREA, MODEL, "pasted frame", paste_box(frame, reference["paste_box"]), reference["frame"])


def test_end_to_end(parity_pool: ModelPool, astronaut: np.ndarray, figures: Figures) -> None:
    """slimfuse's own stages from the fixed geometry (the crop of the worked-on frame, the same crop of the frame as
    it came in as `original`, process, paste) against FaceFusion's restore_expression where both masks are whole.
    Outside the paste area the frame is unchanged."""
    reference = recorded(AREA, MODEL)
    processor = restorer(parity_pool)
    current = standins.worked_on(astronaut)
    crop = processor.crop(current, mesh_face("target"))
    crop = replace(crop, original=processor.crop(astronaut, mesh_face("target")).image)
    result = processor.process([crop], None)[0]
    frame = paste_back(current, result.image, result.alpha, crop.crop_from_frame)
    stage = "restored face where both masks are 1 (slimfuse's stages chained)"
    compare_where_masks_whole(figures, AREA, MODEL, stage, current, frame, reference, reference["frame"])


def test_without_the_original_the_current_face_is_read(parity_pool: ModelPool, astronaut: np.ndarray) -> None:
    """A crop with no `original` (a chain that did not cut one) restores the face's own expression: the output is
    what the generator makes of the face with its keypoints unmoved."""
    processor = restorer(parity_pool)
    crop = processor.crop(astronaut, mesh_face("target"))
    assert np.array_equal(processor.process([crop], None)[0].image, processor.restore(crop.image, crop.image))

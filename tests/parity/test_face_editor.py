"""Parity with FaceFusion 3.8.1's face editor on the live_portrait stand-ins, stage by stage (the recorded stages:
tools/facefusion_reference/record_face_editor.py).

The face has geometry.json's 68 points as well as its five (the eyes' and lips' open ratios are read off them).
The crop is compared with FaceFusion's; the generator's output is computed from FaceFusion's crop for four settings
of the fourteen values (none; every one at once; every sign turned, so both of each edit's branches run; the head
at its limits with the eyes shut and the lips open); the paste from FaceFusion's mask. The deliberate differences
are the expression restorer's (tests/parity/test_expression_restorer.py): the mask's border seam, and rounding
instead of truncation.
"""
from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from parity.faces import mesh_face_68
from parity.reference import (MAX_PIXELS, Figures, compare_where_masks_whole, geometry, mask_float, paste_box, psnr,
                              recorded, standin_pool)
from processor_parts import box_masker
from slimfuse.config import FaceEditorOptions
from slimfuse.faces.align import transform_points
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import EditsFaces
from slimfuse.processors.blend import paste_back
from slimfuse.processors.live_portrait.editor import FaceEditor

AREA = "face_editor"
MODEL = "live_portrait"
MODELS = tuple(f"live_portrait_{key}" for key in ("feature_extractor", "motion_extractor", "eye_retargeter",
                                                  "lip_retargeter", "stitcher", "generator"))
STRIDE = 2
NAMES = tuple(FaceEditorOptions().values())
MIXED = dict(zip(NAMES, (0.6, 0.4, -0.3, 0.5, -0.4, 0.3, -0.2, 0.25, 0.5, -0.15, 0.2, 0.3, -0.25, 0.1), strict=True))
SETTINGS = {
    "none": dict.fromkeys(NAMES, 0.0),
    "mixed": MIXED,
    "turned": {name: -value for name, value in MIXED.items()},
    "limits": {**dict.fromkeys(NAMES, 0.0), "head_pitch": 1.0, "head_yaw": -1.0, "head_roll": 1.0,
               "eye_open_ratio": -1.0, "lip_open_ratio": 1.0, "mouth_smile": -1.0},
}


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return standin_pool(tmp_path_factory.mktemp("parity_face_editor"), store, MODELS)


def editor(pool: ModelPool, values: dict[str, float] | None = None) -> FaceEditor:
    """The processor as a run builds it (the box alone, no padding), with `values` as its options."""
    options = replace(FaceEditorOptions(), **{f"face_editor_{name}": value for name, value in (values or {}).items()})
    return FaceEditor(pool, options, box_masker(pool).box_only())


def points_68() -> np.ndarray:
    return np.asarray(geometry()["target"]["landmark_68"], dtype=np.float64)



def test_crop(parity_pool: ModelPool, astronaut: np.ndarray, figures: Figures) -> None:
    reference = recorded(AREA, MODEL)
    crop = editor(parity_pool).crop(astronaut, mesh_face_68("target"))
    corners = np.array([[0, 0], [512, 0], [512, 512], [0, 512]], dtype=np.float64)
    in_frame = transform_points(cv2.invertAffineTransform(reference["matrix"]), corners)
    assert np.abs(transform_points(crop.crop_from_frame, in_frame) - corners).max() <= MAX_PIXELS
    figures.image(AREA, MODEL, "crop (ffhq_512, 512 px, five points spread 1.5 x)", crop.image, reference["crop"])
    assert np.abs(landmarks_68(crop.landmarks) - transform_points(crop.crop_from_frame, points_68())).max() < 1e-3


@pytest.mark.parametrize("setting", SETTINGS)
def test_model_output(parity_pool: ModelPool, setting: str, figures: Figures) -> None:
    reference = recorded(AREA, MODEL)
    output = editor(parity_pool).edit(reference["crop"], points_68(), SETTINGS[setting])
    figures.image(AREA, MODEL, f"edited crop, {setting} (every {STRIDE}nd pixel)", output[::STRIDE, ::STRIDE],
                  reference[f"output_{setting}"])


def test_the_settings_move_the_output() -> None:
    reference = recorded(AREA, MODEL)
    outputs = [reference[f"output_{setting}"].astype(int) for setting in SETTINGS]
    for index, output in enumerate(outputs):
        for other in outputs[index + 1:]:
            assert np.abs(output - other).mean() > 1


def test_paste(parity_pool: ModelPool, astronaut: np.ndarray, figures: Figures) -> None:
    reference = recorded(AREA, MODEL)
    output = editor(parity_pool).edit(reference["crop"], points_68(), SETTINGS["limits"])
    frame = paste_back(astronaut, output, mask_float(reference["box_mask"]), reference["matrix"])
    figures.image(AREA, MODEL, "pasted frame", paste_box(frame, reference["paste_box"]), reference["frame"])


def test_end_to_end_with_values_changed_while_it_runs(parity_pool: ModelPool, astronaut: np.ndarray,
                                                        figures: Figures) -> None:
    """slimfuse's own stages from the fixed geometry (crop, process, paste), the editor started with no edit and
    given the `limits` values as a live control gives them (EditsFaces), against FaceFusion's edit_face where both
    masks are whole. Outside the paste area the frame is unchanged."""
    reference = recorded(AREA, MODEL)
    processor = editor(parity_pool)
    assert isinstance(processor, EditsFaces)
    processor.edit_faces(SETTINGS["limits"])
    crop = processor.crop(astronaut, mesh_face_68("target"))
    result = processor.process([crop], None)[0]
    frame = paste_back(astronaut, result.image, result.alpha, crop.crop_from_frame)
    stage = "edited face where both masks are 1 (slimfuse's stages chained)"
    compare_where_masks_whole(figures, AREA, MODEL, stage, astronaut, frame, reference, reference["frame"])


def test_a_live_edit_is_checked(parity_pool: ModelPool) -> None:
    processor = editor(parity_pool)
    with pytest.raises(ValueError, match="no mouth_grin"):
        processor.edit_faces({"mouth_grin": 0.5})
    with pytest.raises(ValueError, match="between -1 and 1"):
        processor.edit_faces({"mouth_smile": 1.5})
    assert processor.values["mouth_smile"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_each_edit_moves_the_stand_ins(parity_pool: ModelPool, name: str) -> None:
    """Any one value's sign turned takes the output far from FaceFusion's (below 40 dB): the comparisons above would
    see a wrong move, branch or limit of any edit."""
    values = {**MIXED, name: -MIXED[name]}
    output = editor(parity_pool).edit(recorded(AREA, MODEL)["crop"], points_68(), values)
    assert psnr(output[::STRIDE, ::STRIDE], recorded(AREA, MODEL)["output_mixed"]) < 40

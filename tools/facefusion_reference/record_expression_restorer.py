"""Reference outputs of FaceFusion 3.8.1's expression restorer (live_portrait on parity stand-ins), stage by stage.

The target photo is the frame as it came in (whose expression is restored); `standins.worked_on` of it is the
frame the stages before made. From FaceFusion's own functions, with --face-mask-types box, --face-mask-blur 0.3,
into expression_restorer/live_portrait.npz:
- `original`, `current`: the two 512 px crops (arcface_128), RGB, and `matrix` the crop-from-frame affine;
- `output_F_AREAS`: the generator's crop after FaceFusion's de-normalisation for factor F and the areas (`both`,
  `upper`, `lower`), every STRIDE-th pixel of every STRIDE-th row;
- `box_mask`; `frame`: FaceFusion's restore_expression (factor 80, both areas) cut to `paste_box`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import common

BLUR = 0.3
STRIDE = 2
SETTINGS = {"80_both": (80, ["upper-face", "lower-face"]), "100_upper": (100, ["upper-face"]),
            "30_lower": (30, ["lower-face"])}
SOURCES = {"feature_extractor": "live_portrait_feature_extractor",
           "motion_extractor": "live_portrait_motion_extractor", "generator": "live_portrait_generator"}


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import state_manager
    from facefusion.face_helper import calculate_paste_area, paste_back, warp_face_by_face_landmark_5
    from facefusion.face_masker import create_box_mask
    from facefusion.processors.modules.expression_restorer import core

    target = common.facefusion_face(inputs.geometry["target"], inputs.target_embedding)
    current_bgr = common.standins.worked_on(inputs.target_bgr)
    options = common.use_standins(core, core.create_static_model_set("full")["live_portrait"], models, SOURCES)
    for key, value in (("expression_restorer_model", "live_portrait"), ("face_mask_types", ["box"]),
                       ("face_mask_blur", BLUR)):
        state_manager.init_item(key, value)
    five = target.landmark_set["5/68"]
    original, _ = warp_face_by_face_landmark_5(inputs.target_bgr, five, options["template"], options["size"])
    current, matrix = warp_face_by_face_landmark_5(current_bgr, five, options["template"], options["size"])
    arrays: dict[str, np.ndarray] = {"original": common.rgb(original), "current": common.rgb(current),
                                     "matrix": np.asarray(matrix, dtype=np.float64)}
    outputs = {}
    for key, (factor, areas) in SETTINGS.items():
        state_manager.init_item("expression_restorer_factor", factor)
        state_manager.init_item("expression_restorer_areas", areas)
        outputs[key] = core.normalize_crop_frame(core.apply_restore(
            core.prepare_crop_frame(original), core.prepare_crop_frame(current),
            float(np.interp(factor, [0, 100], [0, 1.2]))))
        arrays[f"output_{key}"] = common.rgb(outputs[key][::STRIDE, ::STRIDE])
    state_manager.init_item("expression_restorer_factor", 80)
    state_manager.init_item("expression_restorer_areas", SETTINGS["80_both"][1])
    mask = create_box_mask(current, BLUR, (0, 0, 0, 0)).clip(0, 1)
    frame = paste_back(current_bgr, outputs["80_both"], mask, matrix)
    if not np.array_equal(frame, core.restore_expression(target, inputs.target_bgr, current_bgr)):
        raise SystemExit("expression_restorer: the stages recorded do not add up to FaceFusion's restore_expression")
    (x1, y1, x2, y2), _ = calculate_paste_area(current_bgr, current, matrix)
    arrays.update(box_mask=common.mask8(mask), frame=common.rgb(frame[y1:y2, x1:x2]),
                  paste_box=np.array([x1, y1, x2, y2]))
    return [common.save("expression_restorer", "live_portrait", arrays)]

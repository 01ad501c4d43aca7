"""Reference outputs of FaceFusion 3.8.1's face editor (live_portrait on parity stand-ins), stage by stage.

From FaceFusion's own functions, with --face-mask-blur 0.3, into face_editor/live_portrait.npz:
- `crop`: the 512 px crop (ffhq_512, the five points spread 1.5 times about the nose), RGB, and `matrix`;
- `output_SETTING`: the generator's crop after FaceFusion's de-normalisation for each of SETTINGS (no edit; every
  edit at once, each value in the one sign; the same with every sign turned; the head turned to its limits), every
  STRIDE-th pixel of every STRIDE-th row;
- `box_mask`; `frame`: FaceFusion's edit_face (setting `limits`, the last set) cut to `paste_box`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import common

BLUR = 0.3
STRIDE = 2
NAMES = ("eyebrow_direction", "eye_gaze_horizontal", "eye_gaze_vertical", "eye_open_ratio", "lip_open_ratio",
         "mouth_grim", "mouth_pout", "mouth_purse", "mouth_smile", "mouth_position_horizontal",
         "mouth_position_vertical", "head_pitch", "head_yaw", "head_roll")
MIXED = dict(zip(NAMES, (0.6, 0.4, -0.3, 0.5, -0.4, 0.3, -0.2, 0.25, 0.5, -0.15, 0.2, 0.3, -0.25, 0.1), strict=True))
SETTINGS = {
    "none": dict.fromkeys(NAMES, 0.0),
    "mixed": MIXED,
    "turned": {name: -value for name, value in MIXED.items()},
    "limits": {**dict.fromkeys(NAMES, 0.0), "head_pitch": 1.0, "head_yaw": -1.0, "head_roll": 1.0,
               "eye_open_ratio": -1.0, "lip_open_ratio": 1.0, "mouth_smile": -1.0},
}
SOURCES = {key: f"live_portrait_{key}" for key in ("feature_extractor", "motion_extractor", "eye_retargeter",
                                                   "lip_retargeter", "stitcher", "generator")}


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import state_manager
    from facefusion.face_helper import calculate_paste_area, paste_back, scale_face_landmark_5, \
        warp_face_by_face_landmark_5
    from facefusion.face_masker import create_box_mask
    from facefusion.processors.modules.face_editor import core

    target = common.facefusion_face(inputs.geometry["target"], inputs.target_embedding)
    options = common.use_standins(core, core.create_static_model_set("full")["live_portrait"], models, SOURCES)
    for key, value in (("face_editor_model", "live_portrait"), ("face_mask_types", ["box"]),
                       ("face_mask_blur", BLUR)):
        state_manager.init_item(key, value)
    five = scale_face_landmark_5(target.landmark_set["5/68"], 1.5)
    crop, matrix = warp_face_by_face_landmark_5(inputs.target_bgr, five, options["template"], options["size"])
    arrays: dict[str, np.ndarray] = {"crop": common.rgb(crop), "matrix": np.asarray(matrix, dtype=np.float64)}
    outputs = {}
    for key, values in SETTINGS.items():
        for name, value in values.items():
            state_manager.init_item(f"face_editor_{name}", value)
        outputs[key] = core.normalize_crop_frame(core.apply_edit(core.prepare_crop_frame(crop),
                                                                 target.landmark_set["68"]))
        arrays[f"output_{key}"] = common.rgb(outputs[key][::STRIDE, ::STRIDE])
    mask = create_box_mask(crop, BLUR, (0, 0, 0, 0)).clip(0, 1)
    frame = paste_back(inputs.target_bgr, outputs["limits"], mask, matrix)
    if not np.array_equal(frame, core.edit_face(target, inputs.target_bgr)):
        raise SystemExit("face_editor: the stages recorded do not add up to FaceFusion's edit_face")
    (x1, y1, x2, y2), _ = calculate_paste_area(inputs.target_bgr, crop, matrix)
    arrays.update(box_mask=common.mask8(mask), frame=common.rgb(frame[y1:y2, x1:x2]),
                  paste_box=np.array([x1, y1, x2, y2]))
    return [common.save("face_editor", "live_portrait", arrays)]

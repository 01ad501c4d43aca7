"""Reference outputs of FaceFusion 3.8.1's age modifier, fran and styleganex_age, stage by stage.

For each model (on parity stand-ins), from FaceFusion's own functions, with --age-modifier-direction DIRECTION and
FaceFusion's mask defaults (--face-mask-types box, --face-mask-blur 0.3), on the target photo's fixed face (its age
group range(20, 30), so `age` 24.5), into age_modifier/NAME.npz:
- fran: `crop` (ffhq_512 at 1024 px, every STRIDE-th pixel), `matrix` (crop from frame), `direction` (the model's
  [2] input), `output` (the model's output after FaceFusion's de-normalisation, every STRIDE-th pixel), `box_mask`
  (1024 px), `frame` (FaceFusion's modify_age, cut to `paste_box`);
- styleganex_age: `face` (ffhq_512 at 256 px) and `face_matrix`, `surroundings` (the five points 0.875 times closer
  around the nose, styleganex_384 at 384 px) and `surroundings_matrix`, `direction` (the scalar input), `output` (the
  model's output at 1024 px with the surroundings' colours matched, FaceFusion's match_frame_color, every STRIDE-th
  pixel), `box_mask` (384 px), `frame` (modify_age, cut to `paste_box`).
Images are RGB uint8, masks uint8 x 255.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

import common

BLUR = 0.3
DIRECTION = 30
STRIDE = 4


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import state_manager
    from facefusion.face_helper import (calculate_paste_area, paste_back, scale_face_landmark_5,
                                        warp_face_by_face_landmark_5)
    from facefusion.face_masker import create_box_mask
    from facefusion.processors.modules.age_modifier import core
    from facefusion.vision import match_frame_color

    target = common.facefusion_face(inputs.geometry["target"], inputs.target_embedding)
    five = target.landmark_set["5/68"]
    model_set = core.create_static_model_set("full")
    for key, value in (("face_mask_types", ["box"]), ("face_mask_blur", BLUR), ("age_modifier_direction", DIRECTION)):
        state_manager.init_item(key, value)
    written = []
    for contract in common.standins.AGE_MODIFIERS:
        name = contract.name
        options = common.use_standins(core, model_set[name], models, {"age_modifier": name})
        state_manager.init_item("age_modifier_model", name)
        templates, sizes = options["templates"], options["sizes"]
        crop, matrix = warp_face_by_face_landmark_5(inputs.target_bgr, five, templates["target"], sizes["target"])
        arrays: dict[str, np.ndarray] = {"age": np.array(np.mean(target.age))}
        if name == "fran":
            mask = create_box_mask(crop, BLUR, (0, 0, 0, 0)).clip(0, 1)
            age = np.mean(target.age)
            direction = (np.array([age, age + DIRECTION], dtype=np.float32) / 100).clip(0, 1)
            prepared = core.prepare_vision_frame(crop)
            output = core.normalize_vision_frame(core.forward(prepared, prepared, direction))
            frame = paste_back(inputs.target_bgr, output, mask, matrix)
            paste_crop = output
            arrays.update(crop=common.rgb(crop[::STRIDE, ::STRIDE]), matrix=np.asarray(matrix, np.float64))
        else:
            wide, wide_matrix = warp_face_by_face_landmark_5(inputs.target_bgr, scale_face_landmark_5(five, 0.875),
                                                             templates["target_with_background"],
                                                             sizes["target_with_background"])
            mask = create_box_mask(wide, BLUR, (0, 0, 0, 0)).clip(0, 1)
            direction = np.array(np.interp(DIRECTION, [-100, 100], [2.5, -2.5])).astype(np.float32)
            raw = core.normalize_extend_frame(core.forward(core.prepare_vision_frame(crop),
                                                           core.prepare_vision_frame(wide), direction))
            output = match_frame_color(wide, raw)
            paste_size = sizes["target"][0] * 4
            paste_matrix = wide_matrix * paste_size / sizes["target_with_background"][0]
            frame = paste_back(inputs.target_bgr, output, cv2.resize(mask, (paste_size, paste_size)), paste_matrix)
            paste_crop = output
            arrays.update(face=common.rgb(crop), face_matrix=np.asarray(matrix, np.float64),
                          surroundings=common.rgb(wide), surroundings_matrix=np.asarray(wide_matrix, np.float64))
            matrix = paste_matrix
        if not np.array_equal(frame, core.modify_age(target, inputs.target_bgr)):
            raise SystemExit(f"{name}: the stages recorded do not add up to FaceFusion's modify_age")
        (x1, y1, x2, y2), _ = calculate_paste_area(inputs.target_bgr, paste_crop, matrix)
        arrays.update(direction=np.asarray(direction), output=common.rgb(output[::STRIDE, ::STRIDE]),
                      box_mask=common.mask8(mask), frame=common.rgb(frame[y1:y2, x1:x2]),
                      paste_box=np.array([x1, y1, x2, y2]))
        written.append(common.save("age_modifier", name, arrays))
    return written

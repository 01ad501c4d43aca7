"""Reference outputs of FaceFusion 3.8.1's deep swapper, stage by stage, on DFM stand-ins.

For each stand-in of tests/parity/standins.py DEEP_SWAPPERS and USER_DFM, at each --deep-swapper-morph of MORPHS
(FaceFusion's default alone for a file without a morph input and the user's file), from FaceFusion's own functions:
- `crop`: the target face aligned to dfl_whole_face at the file's size (RGB uint8), `matrix` its affine;
- `model_input`: the sharpened crop as fed to `in_face:0` (BGR / 255 as FaceFusion feeds it, stored x 255 as RGB);
- `face_mask`, `person`, `person_mask`: the model's three outputs as it gives them ([H, W, C] in 0..1, kept as
  float16; the person's face turned to RGB);
- `output`: the person's face after FaceFusion's de-normalisation and its conditional colour match (RGB uint8);
- `model_mask`: FaceFusion's mask from the model's two masks; `box_mask` the box mask (blur 0.3, no padding);
- `frame`: the frame after paste-back, cut to `paste_box` (x1, y1, x2, y2), FaceFusion's paste area.
Keys carry the morph: `output_m100`, ...; the crop, matrix and box are the same at every morph.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import common

MORPHS = (100, 25)
"""The morphs recorded for a published file that takes one (a user's file and one without: FaceFusion's 100)."""


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import face_masker, state_manager
    from facefusion.face_helper import calculate_paste_area, paste_back, warp_face_by_face_landmark_5
    from facefusion.processors.modules.deep_swapper import core
    from facefusion.vision import conditional_match_frame_color

    target = common.facefusion_face(inputs.geometry["target"], inputs.target_embedding)
    options = {"template": "dfl_whole_face"}
    written = []
    for contract in (*common.standins.DEEP_SWAPPERS, common.standins.USER_DFM):
        name = contract.name
        common.use_standins(core, options, models, {"deep_swapper": name})
        for key, value in (("deep_swapper_model", name), ("face_mask_types", ["box"]), ("face_mask_blur", 0.3),
                           ("face_mask_padding", (0, 0, 0, 0))):
            state_manager.init_item(key, value)
        size = tuple(core.get_model_size())
        crop, matrix = warp_face_by_face_landmark_5(inputs.target_bgr, target.landmark_set["5/68"],
                                                    "dfl_whole_face", size)
        box = face_masker.create_box_mask(crop, 0.3, (0, 0, 0, 0))
        arrays: dict[str, np.ndarray] = {"crop": common.rgb(crop), "matrix": np.asarray(matrix, dtype=np.float64),
                                         "box_mask": common.mask8(box)}
        prepared = core.prepare_crop_frame(crop)
        arrays["model_input"] = common.rgb(prepared[0] * 255.0)
        published = contract in common.standins.DEEP_SWAPPERS
        for morph in MORPHS if published and core.has_morph_input() else MORPHS[:1]:
            state_manager.init_item("deep_swapper_morph", morph)
            value = np.array([np.interp(morph, [0, 100], [0, 1])]).astype(np.float32)
            person, person_mask, face_mask = core.forward(prepared, value)
            output = conditional_match_frame_color(crop, core.normalize_crop_frame(person))
            model_mask = core.prepare_crop_mask(person_mask, face_mask)
            frame = paste_back(inputs.target_bgr, output, np.minimum.reduce([box, model_mask]).clip(0, 1), matrix)
            whole = core.swap_face(target, inputs.target_bgr)
            if not np.array_equal(frame, whole):
                raise SystemExit(f"{name}: the stages recorded do not add up to FaceFusion's swap_face")
            (x1, y1, x2, y2), _ = calculate_paste_area(inputs.target_bgr, output, matrix)
            arrays.update({
                f"face_mask_m{morph}": face_mask.astype(np.float16),
                f"person_m{morph}": person[..., ::-1].astype(np.float16),
                f"person_mask_m{morph}": person_mask.astype(np.float16),
                f"output_m{morph}": common.rgb(output),
                f"model_mask_m{morph}": common.mask8(model_mask),
                f"frame_m{morph}": common.rgb(frame[y1:y2, x1:x2]),
                "paste_box": np.array([x1, y1, x2, y2]),
            })
        written.append(common.save("deep_swapper", name.replace("/", "--"), arrays))
    return written

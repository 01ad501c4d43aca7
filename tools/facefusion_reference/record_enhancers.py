"""Reference outputs of FaceFusion 3.8.1's face enhancer, model by model, stage by stage.

For each of the 8 face enhancers slimfuse's catalog has (on parity stand-ins), from FaceFusion's own functions, with
its defaults (--face-mask-types box, --face-mask-blur 0.3, --face-enhancer-blend 80, --face-enhancer-weight 0.5),
into enhancers/NAME.npz:
- `output`: the model's output crop after FaceFusion's de-normalisation (RGB, rounded), every STRIDE-th pixel of
  every STRIDE-th row (the whole crop is compared through the pasted frame); codeformer also `output_w0` and
  `output_w100`, at --face-enhancer-weight 0 and 1 (`output` is 0.5);
- `box_mask`: the paste mask (the box, blur 0.3, no padding: FaceFusion's enhancer ignores --face-mask-padding);
- `frame`: the frame after paste-back, cut to `paste_box` (x1, y1, x2, y2), FaceFusion's paste area, and `blended`
  the same area after the blend with the frame before (80 %), which is FaceFusion's `enhance_face`;
- `matrix`: the 2x3 crop-from-frame affine.
The aligned crops, the same for every model of a template and size, go once into enhancers/crops.npz as
`TEMPLATE_SIZE` (RGB uint8); the 1024 px one at every STRIDE-th pixel like the outputs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import common

BLUR = 0.3
BLEND = 80
WEIGHTS = {"output_w0": 0.0, "output": 0.5, "output_w100": 1.0}
STRIDE = 4
WHOLE_CROPS = 512
"""Crops up to this size are stored whole: the parity tests feed them to slimfuse's model stage."""


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import state_manager
    from facefusion.face_helper import calculate_paste_area, paste_back, warp_face_by_face_landmark_5
    from facefusion.face_masker import create_box_mask
    from facefusion.processors.modules.face_enhancer import core

    target = common.facefusion_face(inputs.geometry["target"], inputs.target_embedding)
    model_set = core.create_static_model_set("full")
    written = []
    crops: dict[str, np.ndarray] = {}
    for contract in common.standins.FACE_ENHANCERS:
        name = contract.name
        options = common.use_standins(core, model_set[name], models, {"face_enhancer": name})
        for key, value in (("face_enhancer_model", name), ("face_mask_types", ["box"]), ("face_mask_blur", BLUR),
                           ("face_enhancer_blend", BLEND), ("face_enhancer_weight", 0.5)):
            state_manager.init_item(key, value)
        crop, matrix = warp_face_by_face_landmark_5(inputs.target_bgr, target.landmark_set["5/68"],
                                                    options["template"], options["size"])
        mask = create_box_mask(crop, BLUR, (0, 0, 0, 0)).clip(0, 1)
        outputs = {}
        for key, weight in WEIGHTS.items() if core.has_weight_input() else (("output", 0.5),):
            fidelity = np.array([weight]).astype(np.double)
            outputs[key] = core.normalize_crop_frame(core.forward(core.prepare_crop_frame(crop), fidelity))
        frame = paste_back(inputs.target_bgr, outputs["output"], mask, matrix)
        blended = core.blend_paste_frame(inputs.target_bgr, frame)
        if not np.array_equal(blended, core.enhance_face(target, inputs.target_bgr)):
            raise SystemExit(f"{name}: the stages recorded do not add up to FaceFusion's enhance_face")
        (x1, y1, x2, y2), _ = calculate_paste_area(inputs.target_bgr, crop, matrix)
        arrays = {key: common.rgb(output[::STRIDE, ::STRIDE]) for key, output in outputs.items()}
        arrays.update(box_mask=common.mask8(mask), frame=common.rgb(frame[y1:y2, x1:x2]),
                      blended=common.rgb(blended[y1:y2, x1:x2]), paste_box=np.array([x1, y1, x2, y2]),
                      matrix=np.asarray(matrix, dtype=np.float64))
        written.append(common.save("enhancers", name, arrays))
        kept = common.rgb(crop if crop.shape[0] <= WHOLE_CROPS else crop[::STRIDE, ::STRIDE])
        key = f"{options['template']}_{crop.shape[0]}"
        if key in crops and not np.array_equal(crops[key], kept):
            raise SystemExit(f"{name}: its {key} crop differs from another model's")
        crops[key] = kept
    written.append(common.save("enhancers", "crops", crops))
    return written

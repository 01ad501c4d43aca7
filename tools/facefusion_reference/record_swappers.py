"""Reference outputs of FaceFusion 3.8.1's face swapper, model by model, stage by stage.

For each of FaceFusion's 13 swappers (on parity stand-ins) it records, from FaceFusion's own functions:
- `source_w0`, `source_w50`, `source_w100`: the tensor fed to the model's `source` input with --face-swapper-weight
  0, 0.5 and 1 (a picture of the source face for blendswap and uniface: `source`);
- `crop_N`: the target face aligned to the model's template at pixel boost N (RGB uint8);
- `output_N`: the model's output crop after FaceFusion's de-normalisation (RGB, rounded);
- `box_mask_N`: the box mask (blur 0.3, no padding: FaceFusion's defaults) and `frame_N` the frame after paste-back,
  cut to `paste_box_N` (x1, y1, x2, y2), FaceFusion's paste area.
Each model at its own size; inswapper_128 also at 256 (pixel boost x2), inswapper_128_fp16 at 384 (x3).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import common

BOOSTS = {"inswapper_128": (128, 256), "inswapper_128_fp16": (128, 384)}
WEIGHTS = {"w0": 0.0, "w50": 0.5, "w100": 1.0}


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import face_masker, state_manager
    from facefusion.face_helper import calculate_paste_area, paste_back, warp_face_by_face_landmark_5
    from facefusion.processors.modules.face_swapper import core
    from facefusion.processors.pixel_boost import explode_pixel_boost, implode_pixel_boost

    target = common.facefusion_face(inputs.geometry["target"], inputs.target_embedding)
    source = common.facefusion_face(inputs.geometry["source"], inputs.source_embedding)
    model_set = core.create_static_model_set("full")
    written = []
    for contract in common.standins.SWAPPERS:
        name = contract.name
        sources = {"face_swapper": name}
        converter = model_set[name]["sources"].get("embedding_converter")
        if converter is not None:
            sources["embedding_converter"] = Path(converter["path"]).stem
        options = common.use_standins(core, model_set[name], models, sources)
        for key, value in (("face_swapper_model", name), ("face_mask_types", ["box"]), ("face_mask_blur", 0.3),
                           ("face_mask_padding", (0, 0, 0, 0)), ("face_swapper_weight", 0.5)):
            state_manager.init_item(key, value)
        arrays: dict[str, np.ndarray] = {}
        if options["type"] in ("blendswap", "uniface"):
            arrays["source"] = core.prepare_source_frame(source, inputs.source_bgr)
        else:
            for key, weight in WEIGHTS.items():
                state_manager.init_item("face_swapper_weight", weight)
                embedding = core.prepare_source_embedding(source)
                arrays[f"source_{key}"] = core.balance_source_embedding(embedding, target.embedding)
            state_manager.init_item("face_swapper_weight", 0.5)
        size = options["size"]
        for boost in BOOSTS.get(name, (size[0],)):
            state_manager.init_item("face_swapper_pixel_boost", f"{boost}x{boost}")
            crop, matrix = warp_face_by_face_landmark_5(inputs.target_bgr, target.landmark_set["5/68"],
                                                        options["template"], (boost, boost))
            tiles = []
            for tile in implode_pixel_boost(crop, boost // size[0], size):
                tile = core.forward_swap_face(source, target, inputs.source_bgr, core.prepare_crop_frame(tile))
                tiles.append(core.normalize_crop_frame(tile))
            output = explode_pixel_boost(tiles, boost // size[0], size, (boost, boost))
            mask = face_masker.create_box_mask(crop, 0.3, (0, 0, 0, 0))
            frame = paste_back(inputs.target_bgr, output, mask, matrix)
            whole = core.swap_face(source, target, inputs.source_bgr, inputs.target_bgr)
            if not np.array_equal(frame, whole):
                raise SystemExit(f"{name}: the stages recorded do not add up to FaceFusion's swap_face")
            (x1, y1, x2, y2), _ = calculate_paste_area(inputs.target_bgr, output, matrix)
            arrays[f"crop_{boost}"] = common.rgb(crop)
            arrays[f"output_{boost}"] = common.rgb(output)
            arrays[f"box_mask_{boost}"] = common.mask8(mask)
            arrays[f"frame_{boost}"] = common.rgb(frame[y1:y2, x1:x2])
            arrays[f"paste_box_{boost}"] = np.array([x1, y1, x2, y2])
            arrays[f"matrix_{boost}"] = np.asarray(matrix, dtype=np.float64)
        written.append(common.save("swappers", name, arrays))
    return written

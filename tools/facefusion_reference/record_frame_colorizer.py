"""Reference outputs of FaceFusion 3.8.1's frame colouriser, its five models, stage by stage.

The frame is a CUT (x, y, width, height) of the target photo, wider than high, so the model's square input is a
resize both ways. Each model runs at its own --frame-colorizer-size (SIZES: every size FaceFusion offers is used),
on parity stand-ins, from FaceFusion's own functions, into frame_colorizer/NAME.npz:
- `input`: the model's input tensor (float32 [3, S, S], every STRIDE-th pixel), FaceFusion's prepare_temp_frame;
- `colours`: the model's output stretched over the frame (float32 H x W x C, every STRIDE-th pixel), as
  merge_color_frame resizes it;
- `merged`: merge_color_frame's result (RGB uint8); for the deoldify family also `merged_lightness`, the same merge
  given the frame with its blue channel replaced by its 8-bit LAB lightness (FaceFusion joins the colours to the
  blue channel; slimfuse to the lightness);
- `blended`: FaceFusion's colorize_frame at --frame-colorizer-blend BLEND.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

import common

CUT = (120, 40, 280, 180)
SIZES = {"ddcolor": 256, "ddcolor_artistic": 384, "deoldify": 192, "deoldify_artistic": 256, "deoldify_stable": 512}
BLEND = 80
STRIDE = 4


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import state_manager
    from facefusion.processors.modules.frame_colorizer import core

    x, y, width, height = CUT
    frame = np.ascontiguousarray(inputs.target_bgr[y:y + height, x:x + width])
    lightness = frame.copy()
    lightness[..., 0] = cv2.cvtColor(frame, cv2.COLOR_BGR2LAB)[..., 0]
    model_set = core.create_static_model_set("full")
    written = []
    for contract in common.standins.FRAME_COLORIZERS:
        name = contract.name
        common.use_standins(core, model_set[name], models, {"frame_colorizer": name})
        size = SIZES[name]
        for key, value in (("frame_colorizer_model", name), ("frame_colorizer_size", f"{size}x{size}"),
                           ("frame_colorizer_blend", BLEND)):
            state_manager.init_item(key, value)
        tensor = core.prepare_temp_frame(frame)
        output = core.forward(tensor)
        colours = cv2.resize(output.transpose(1, 2, 0), (width, height))
        merged = core.merge_color_frame(frame, output)
        blended = core.blend_color_frame(frame, merged)
        if not np.array_equal(blended, core.colorize_frame(frame)):
            raise SystemExit(f"{name}: the stages recorded do not add up to FaceFusion's colorize_frame")
        arrays = {"cut": np.array(CUT), "size": np.array(size), "input": tensor[0, :, ::STRIDE, ::STRIDE],
                  "colours": colours[::STRIDE, ::STRIDE].astype(np.float32), "merged": common.rgb(merged),
                  "blended": common.rgb(blended)}
        if contract.activation == "rgb255":
            arrays["merged_lightness"] = common.rgb(core.merge_color_frame(lightness, output))
        written.append(common.save("frame_colorizer", name, arrays))
    return written

"""Reference outputs of FaceFusion 3.8.1's frame enhancer, real_esrgan_x2 and real_esrgan_x4, stage by stage.

The frame is a 240 x 48 cut of the target photo (`cut`: x, y, width, height): wide enough for FaceFusion's tiling to
take two tiles side by side, small enough for the outputs to stay small. For each model (on parity stand-ins),
from FaceFusion's own functions, with its tile size, pad and margin (the model table's `size`: 256, 16, 8), into
frame_enhancer/NAME.npz:
- `tiles`: the tiles FaceFusion cuts from the frame padded with black (RGB uint8, N x 256 x 256), and `tile_outputs`
  the model's output for each after FaceFusion's de-normalisation (x255, clipped, truncated to uint8);
- `joined`: the tiles' centres joined and cut to the frame, at the model's scale;
- `blended`: FaceFusion's `enhance_frame`: the joined frame blended (80 %, its default) with the frame resized
  to its size.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import common

CUT = (136, 96, 240, 48)
BLEND = 80


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import state_manager
    from facefusion.processors.modules.frame_enhancer import core
    from facefusion.vision import create_tile_frames, merge_tile_frames

    x, y, width, height = CUT
    frame = np.ascontiguousarray(inputs.target_bgr[y:y + height, x:x + width])
    model_set = core.create_static_model_set("full")
    written = []
    for contract in common.standins.FRAME_ENHANCERS:
        name = contract.name
        options = common.use_standins(core, model_set[name], models, {"frame_enhancer": name})
        state_manager.init_item("frame_enhancer_model", name)
        state_manager.init_item("frame_enhancer_blend", BLEND)
        size, scale = options["size"], options["scale"]
        tiles, pad_width, pad_height = create_tile_frames(frame, size)
        outputs = [core.normalize_tile_frame(core.forward(core.prepare_tile_frame(tile))) for tile in tiles]
        joined = merge_tile_frames(list(outputs), width * scale, height * scale, pad_width * scale,
                                   pad_height * scale, tuple(side * scale for side in size))
        blended = core.blend_merge_frame(frame, joined)
        if not np.array_equal(blended, core.enhance_frame(frame)):
            raise SystemExit(f"{name}: the stages recorded do not add up to FaceFusion's enhance_frame")
        written.append(common.save("frame_enhancer", name, {
            "cut": np.array(CUT), "tile_size": np.array(size), "scale": np.array(scale),
            "tiles": np.stack([common.rgb(tile) for tile in tiles]),
            "tile_outputs": np.stack([common.rgb(output) for output in outputs]),
            "joined": common.rgb(joined), "blended": common.rgb(blended)}))
    return written

"""Reference outputs of FaceFusion 3.8.1's background remover, every model of its list, on parity stand-ins.

The frame is a 240 x 200 cut of the target photo (`cut`: x, y, width, height; the astronaut's head, her suit's
collar and the background on both sides). For each model, from FaceFusion's own functions, into
background_remover/NAME.npz:
- `mask`: the foreground's alpha remove_background gives (uint8, the frame's size), with FaceFusion's default
  colours (fill and despill 0 0 0 0), and for corridor_key `kept`: the frame it gives then (its foreground);
- `filled`: the frame with FILL laid over the background and DESPILL taken off (both written beside, RGBA), and
  `process_mask`: process_frame's mask for an opaque incoming frame (the alpha FaceFusion writes).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import common

CUT = (120, 20, 240, 200)
FILL = (30, 200, 90, 160)
DESPILL = (0, 255, 0, 200)
NONE = (0, 0, 0, 0)


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import state_manager
    from facefusion.processors.modules.background_remover import core

    x, y, width, height = CUT
    frame = np.ascontiguousarray(inputs.target_bgr[y:y + height, x:x + width])
    model_set = core.create_static_model_set("full")
    written = []
    for contract in common.standins.REMOVERS:
        name = contract.name
        common.use_standins(core, model_set[name], models, {"background_remover": name})
        state_manager.init_item("background_remover_model", name)
        state_manager.init_item("background_remover_fill_color", NONE)
        state_manager.init_item("background_remover_despill_color", NONE)
        kept, mask = core.remove_background(frame.copy())
        state_manager.init_item("background_remover_fill_color", FILL)
        state_manager.init_item("background_remover_despill_color", DESPILL)
        opaque = np.full(frame.shape[:2], 255, dtype=np.uint8)
        filled, process_mask = core.process_frame({"target_vision_frames": [frame], "temp_vision_frame": frame.copy(),
                                                   "temp_vision_mask": opaque})
        if not np.array_equal(process_mask, mask):
            raise SystemExit(f"{name}: process_frame's mask is not remove_background's")
        foreground = {"kept": common.rgb(kept)} if contract.inputs[0].shape[1] == 4 else {}
        written.append(common.save("background_remover", name, {
            "cut": np.array(CUT), "fill": np.array(FILL), "despill": np.array(DESPILL), "mask": mask,
            "filled": common.rgb(filled), "process_mask": process_mask, **foreground}))
    return written

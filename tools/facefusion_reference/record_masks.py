"""Reference outputs of FaceFusion 3.8.1's face masks (facefusion/face_masker.py), on the target's crop as its face
swapper cuts it: hyperswap_1a_256's (FaceFusion's default swapper), the arcface_128 template at 256 px, FaceFusion's
warp. One file, masks.npz:
- `crop` (RGB uint8), `matrix` (frame to crop) and `points_68`: the 68 points moved into the crop as FaceFusion moves
  them for its area mask;
- `box_bBLUR_pPADDING`: the box mask at blur 0, 0.3, 0.6 and padding 0 0 0 0 or 10 20 30 40 (e.g. box_b30_p0);
- `occluder_raw_xseg_N`: the occluder's own mask (its output, clipped), `occlusion_xseg_N` the occlusion mask, and
  `occlusion_many` (--face-occluder-model many: the least of the three);
- `parser_classes_bisenet_resnet_N`: the parser's most likely class per pixel (512 x 512); `region_MODEL_SELECTION` the
  region mask for the selections in REGION_SELECTIONS;
- `area_AREA`: the area mask of each single area and of all three (`area_all`);
- `combined`: the least of the box (blur 0.3, no padding), xseg_1's occlusion, all areas and bisenet_resnet_34's
  regions (all of FaceFusion's), each on the target's crop; `swapped` (RGB uint8), hyperswap_1a_256's output crop, and
  `combined_swapped`, the same least with the regions of the swapped crop, which is how FaceFusion's swap_face
  combines them (checked here against swap_face's whole result).
Masks are uint8 x 255.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np

import common

SWAPPER = "hyperswap_1a_256"
BLURS = {"b0": 0.0, "b30": 0.3, "b60": 0.6}
PADDINGS = {"p0": (0, 0, 0, 0), "p10_20_30_40": (10, 20, 30, 40)}
OCCLUDERS = tuple(contract.name for contract in common.standins.OCCLUDERS)
PARSERS = tuple(contract.name for contract in common.standins.PARSERS)
ALL_REGIONS = ("skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth",
               "upper-lip", "lower-lip")
REGION_SELECTIONS = {"all": ALL_REGIONS, "skin_nose_mouth": ("skin", "nose", "mouth"), "glasses": ("glasses",),
                     "brows_lips": ("left-eyebrow", "right-eyebrow", "upper-lip", "lower-lip")}
"""FaceFusion's default (all of its ten regions), a face without eyes, glasses alone (no patch of the stand-in
bisenet_resnet_18's picture is glasses: its mask is empty in both programs), and brows and lips."""
AREAS = ("upper-face", "lower-face", "mouth")


class Captured:
    """A stand-in for one of face_masker's forward functions: calls it and keeps its last input and output."""

    def __init__(self, forward: Callable[..., np.ndarray]) -> None:
        self.forward = forward
        self.input: np.ndarray | None = None
        self.output: np.ndarray | None = None

    def __call__(self, prepared: np.ndarray, *args: Any) -> np.ndarray:
        self.input, self.output = prepared, self.forward(prepared, *args)
        return self.output


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import face_masker, state_manager
    from facefusion.face_helper import paste_back, warp_face_by_face_landmark_5
    from facefusion.processors.modules.face_swapper import core

    sessions = {name: common.session(name, models) for name in (*OCCLUDERS, *PARSERS)}
    face_masker.get_inference_pool = lambda: sessions
    occlude, parse = Captured(face_masker.forward_occlude_face), Captured(face_masker.forward_parse_face)
    face_masker.forward_occlude_face, face_masker.forward_parse_face = occlude, parse

    target = common.facefusion_face(inputs.geometry["target"], inputs.target_embedding)
    source = common.facefusion_face(inputs.geometry["source"], inputs.source_embedding)
    options: dict[str, Any] = dict(core.create_static_model_set("full")[SWAPPER])
    options["sources"] = {"face_swapper": {"path": str(common.standins.write(SWAPPER, models))}}
    swapper_sessions = {"face_swapper": common.session(SWAPPER, models)}
    core.get_model_options = lambda: options
    core.get_inference_pool = lambda: swapper_sessions
    size = options["size"]
    for key, value in (("face_swapper_model", SWAPPER), ("face_swapper_pixel_boost", f"{size[0]}x{size[1]}"),
                       ("face_swapper_weight", 0.5), ("face_mask_types", ["box", "occlusion", "area", "region"]),
                       ("face_mask_blur", 0.3), ("face_mask_padding", (0, 0, 0, 0)), ("face_mask_areas", list(AREAS)),
                       ("face_mask_regions", list(ALL_REGIONS)), ("face_occluder_model", "xseg_1"),
                       ("face_parser_model", "bisenet_resnet_34")):
        state_manager.init_item(key, value)

    crop, matrix = warp_face_by_face_landmark_5(inputs.target_bgr, target.landmark_set["5/68"], options["template"],
                                                size)
    points_68 = cv2.transform(target.landmark_set["68"].reshape(1, -1, 2), matrix).reshape(-1, 2)
    arrays: dict[str, np.ndarray] = {"crop": common.rgb(crop), "matrix": np.asarray(matrix, dtype=np.float64),
                                     "points_68": np.asarray(points_68, dtype=np.float64)}
    for blur_key, blur in BLURS.items():
        for padding_key, padding in PADDINGS.items():
            arrays[f"box_{blur_key}_{padding_key}"] = common.mask8(face_masker.create_box_mask(crop, blur, padding))

    for name in (*OCCLUDERS, "many"):
        state_manager.init_item("face_occluder_model", name)
        arrays[f"occlusion_{name}"] = common.mask8(face_masker.create_occlusion_mask(crop))
        if name != "many":
            if not np.array_equal(occlude.input, crop[np.newaxis].astype(np.float32) / 255.0):
                raise SystemExit(f"{name}: FaceFusion no longer feeds its occluder the crop as it has it (BGR / 255)")
            arrays[f"occluder_raw_{name}"] = common.mask8(np.clip(np.asarray(occlude.output)[..., 0], 0, 1))
    state_manager.init_item("face_occluder_model", "xseg_1")

    for name in PARSERS:
        state_manager.init_item("face_parser_model", name)
        for selection, regions in REGION_SELECTIONS.items():
            arrays[f"region_{name}_{selection}"] = common.mask8(face_masker.create_region_mask(crop, list(regions)))
        arrays[f"parser_classes_{name}"] = np.asarray(parse.output).argmax(0).astype(np.uint8)
    state_manager.init_item("face_parser_model", "bisenet_resnet_34")

    for area in AREAS:
        arrays[f"area_{area.replace('-', '_')}"] = common.mask8(face_masker.create_area_mask(crop, points_68, [area]))
    arrays["area_all"] = common.mask8(face_masker.create_area_mask(crop, points_68, list(AREAS)))

    shared = [face_masker.create_box_mask(crop, 0.3, (0, 0, 0, 0)), face_masker.create_occlusion_mask(crop),
              face_masker.create_area_mask(crop, points_68, list(AREAS))]
    arrays["combined"] = common.mask8(np.minimum.reduce(
        [*shared, face_masker.create_region_mask(crop, list(ALL_REGIONS))]).clip(0, 1))
    swapped = core.normalize_crop_frame(core.forward_swap_face(source, target, inputs.source_bgr,
                                                               core.prepare_crop_frame(crop)))
    combined_swapped = np.minimum.reduce([*shared, face_masker.create_region_mask(swapped, list(ALL_REGIONS))]).clip(0, 1)
    whole = core.swap_face(source, target, inputs.source_bgr, inputs.target_bgr)
    if not np.array_equal(paste_back(inputs.target_bgr, swapped, combined_swapped, matrix), whole):
        raise SystemExit("the masks recorded do not add up to FaceFusion's swap_face")
    arrays["swapped"] = common.rgb(swapped)
    arrays["combined_swapped"] = common.mask8(combined_swapped)
    return [common.save("masks", "masks", arrays)]

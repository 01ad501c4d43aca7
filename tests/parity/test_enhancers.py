"""Parity with FaceFusion 3.8.1's face enhancer, model by model, stage by stage (the recorded stages:
tools/facefusion_reference/record_enhancers.py).

slimfuse's EnhanceProcessor runs the parity stand-ins, loaded through a store (so the catalog's tensor checks meet
FaceFusion's contracts), with the run's enhancer mask (the box, blur 0.3, no padding) and default blend (80).
Each stage is given FaceFusion's recorded input of that stage: the crop is compared with FaceFusion's, the model's
output is computed from FaceFusion's crop, the paste from FaceFusion's mask. gpen_bfr_1024's crop is recorded at
every 4th pixel only, so its model runs on slimfuse's own crop (equal to FaceFusion's, as its crop test shows).

The one deliberate difference is the box mask: FaceFusion's still holds about 5 % along the crop's border (a faint
seam where the crop ends); slimfuse lowers it by that border value and stretches it back to 1. The mask test checks
exactly that relation; the end-to-end test compares the frames where both masks are whole.
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from parity import standins
from parity.faces import mesh_face
from parity.reference import MAX_PIXELS, Figures, compare_where_masks_whole, paste_box, mask_float, recorded, standin_pool
from processor_parts import box_masker, make_enhancer
from slimfuse.faces.align import transform_points
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.blend import paste_back
from slimfuse.processors.enhance import EnhanceProcessor

AREA = "enhancers"

MODELS = tuple(contract.name for contract in standins.FACE_ENHANCERS)
STRIDE = 4
"""The recorder keeps every 4th pixel of each output (and of the 1024 px crop)."""
WHOLE_CROPS = 512
BLEND = 80
WEIGHTS = {"output_w0": 0.0, "output": 0.5, "output_w100": 1.0}


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("parity_enhancers")
    return standin_pool(root, store, MODELS)


def enhancer(pool: ModelPool, model: str, weight: float = 0.5) -> EnhanceProcessor:
    """The processor as a run builds it: the enhancer's masker (chain.py: `masker.for_enhancer()`)."""
    return make_enhancer(pool, model, blend=BLEND, weight=weight, masker=box_masker(pool).for_enhancer())


def facefusion_crop(processor: EnhanceProcessor) -> np.ndarray:
    return recorded("enhancers", "crops")[f"{processor.template}_{processor.size}"]


def model_input(processor: EnhanceProcessor, astronaut: np.ndarray) -> FaceCrop:
    """FaceFusion's crop with its matrix; gpen_bfr_1024's own crop (FaceFusion's is not stored whole)."""
    own = processor.crop(astronaut, mesh_face("target"))
    if processor.size > WHOLE_CROPS:
        return own
    return FaceCrop(facefusion_crop(processor), own.landmarks, recorded("enhancers", processor.model)["matrix"])



@pytest.mark.parametrize("model", MODELS)
def test_crop(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    processor = enhancer(parity_pool, model)
    crop = processor.crop(astronaut, mesh_face("target"))
    theirs = recorded("enhancers", model)["matrix"]
    size = processor.size
    corners = np.array([[0, 0], [size, 0], [size, size], [0, size]], dtype=np.float64)
    in_frame = transform_points(cv2.invertAffineTransform(theirs), corners)
    assert np.abs(transform_points(crop.crop_from_frame, in_frame) - corners).max() <= MAX_PIXELS
    mine = crop.image if size <= WHOLE_CROPS else crop.image[::STRIDE, ::STRIDE]
    figures.image(AREA, model, "aligned crop", mine, facefusion_crop(processor))


@pytest.mark.parametrize("model", MODELS)
def test_model_output(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    reference = recorded("enhancers", model)
    weights = {key: weight for key, weight in WEIGHTS.items() if key in reference}
    assert len(weights) == (3 if model == "codeformer" else 1)
    for key, weight in weights.items():
        processor = enhancer(parity_pool, model, weight)
        output = processor.process([model_input(processor, astronaut)], None)[0].image
        figures.image(AREA, model, f"{key} crop (every {STRIDE}th pixel)", output[::STRIDE, ::STRIDE], reference[key])


def test_codeformer_weight_moves_the_output() -> None:
    """The stand-in's fidelity input is live, so the weight test above compares three different outputs."""
    reference = recorded("enhancers", "codeformer")
    for other in ("output_w0", "output_w100"):
        assert np.abs(reference[other].astype(int) - reference["output"]).mean() > 5


@pytest.mark.parametrize("model", MODELS)
def test_paste_mask(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    processor = enhancer(parity_pool, model)
    alpha = processor.process([model_input(processor, astronaut)], None)[0].alpha / np.float32(BLEND / 100)
    theirs = mask_float(recorded("enhancers", model)["box_mask"])
    border = max(theirs[0].max(), theirs[-1].max(), theirs[:, 0].max(), theirs[:, -1].max())
    assert 0.03 < border < 0.08  # FaceFusion's seam, which slimfuse takes away
    assert alpha[0].max() == alpha[:, -1].max() == 0
    figures.image(AREA, model, "paste mask (FaceFusion's lowered by its border)", alpha * 255,
                  np.clip((theirs - border) / (1 - border), 0, 1) * 255)


@pytest.mark.parametrize("model", MODELS)
def test_paste_and_blend(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    """FaceFusion pastes the whole enhanced face, then blends the frame with the one before; slimfuse pastes once
    with the mask times the blend: the same mix, rounded once instead of twice."""
    reference = recorded("enhancers", model)
    processor = enhancer(parity_pool, model)
    crop = model_input(processor, astronaut)
    output = processor.process([crop], None)[0].image
    mask = mask_float(reference["box_mask"])
    for key, share in (("frame", 1.0), ("blended", BLEND / 100)):
        frame = paste_back(astronaut, output, mask * np.float32(share), reference["matrix"])
        stage = {"frame": "pasted frame", "blended": "blended frame"}[key]
        figures.image(AREA, model, stage, paste_box(frame, reference["paste_box"]), reference[key])


@pytest.mark.parametrize("model", MODELS)
def test_end_to_end(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    """slimfuse's own stages from the fixed geometry (what the chain runs: crop, process, paste) against
    FaceFusion's enhance_face, where FaceFusion's mask is whole (and so slimfuse's); nearer the crop's edge the masks
    differ by design (see above). Outside the paste area neither changes the frame."""
    reference = recorded("enhancers", model)
    processor = enhancer(parity_pool, model)
    crop = processor.crop(astronaut, mesh_face("target"))
    result = processor.process([crop], None)[0]
    frame = paste_back(astronaut, result.image, result.alpha, crop.crop_from_frame)
    stage = "whole enhancement where both masks are 1 (slimfuse's stages chained)"
    compare_where_masks_whole(figures, AREA, model, stage, astronaut, frame, reference, reference["blended"])

"""The deep swapper against FaceFusion 3.8.1's recorded outputs (tests/parity/reference/deep_swapper), on DFM
stand-ins (random convolutions with DeepFaceLab's DFM contract) loaded through slimfuse's store: two of FaceFusion's
published names (one with a morph input, one without) and a user's own file (custom/NAME).

Stage by stage, each fed FaceFusion's recorded input of that stage: the aligned crop, the sharpened model input, the
model's person and masks, the colour match, the model's mask, the pasted frame; then slimfuse's own stages chained
from the fixed geometry. What differs on purpose: slimfuse's box mask lowers FaceFusion's faint border to 0, so the
chained run here combines the model's mask with the box both share (`blurred_box`), as the swappers' test does.
"""
from __future__ import annotations

import numpy as np
import pytest

from parity import standins
from parity.faces import mesh_face
from parity.reference import Figures, geometry, mask_float, recorded, standin_pool
from slimfuse.config import DeepSwapOptions, MaskOptions
from slimfuse.faces.align import warp_face
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.blend import paste_back
from slimfuse.processors.deep_swap import DeepSwapProcessor, model_mask, sharpened, to_rgb8
from slimfuse.processors.mask_types import blurred_box
from slimfuse.processors.match_color import match_colours
from slimfuse.processors.paste_masks import FaceMasker

AREA = "deep_swapper"
MODELS = [contract.name for contract in (*standins.DEEP_SWAPPERS, standins.USER_DFM)]


def reference(model: str) -> dict[str, np.ndarray]:
    return recorded(AREA, model.replace("/", "--"))


def morphs(model: str) -> list[int]:
    return sorted(int(key.removeprefix("output_m")) for key in reference(model) if key.startswith("output_m"))


CASES = [(model, morph) for model in MODELS for morph in morphs(model)]
IDS = [f"{model}-m{morph}" for model, morph in CASES]


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return standin_pool(tmp_path_factory.mktemp("parity_deep_swapper"), store, MODELS)


def processor(pool: ModelPool, model: str, morph: int) -> DeepSwapProcessor:
    """The model's processor with no run masks: its alpha is the model's own mask."""
    masker = FaceMasker(pool, MaskOptions(face_mask_types=()), None)
    return DeepSwapProcessor(pool, DeepSwapOptions(deep_swapper_model=model, deep_swapper_morph=morph), masker,
                             AdaptiveBatcher(pool))


def five() -> np.ndarray:
    return np.asarray(geometry()["target"]["five"], dtype=np.float64)


@pytest.mark.parametrize("model", MODELS)
def test_aligned_crop(parity_pool: ModelPool, model: str, astronaut: np.ndarray, figures: Figures) -> None:
    recorded_ = reference(model)
    size = processor(parity_pool, model, 100).size
    crop, matrix = warp_face(astronaut, five(), "dfl_whole_face", size)
    np.testing.assert_allclose(matrix, recorded_["matrix"], atol=1e-3 * size / 128)
    figures.image(AREA, model, f"aligned crop {size} px", crop, recorded_["crop"])


@pytest.mark.parametrize("model", MODELS)
def test_model_input(model: str, figures: Figures) -> None:
    """The sharpened crop fed to in_face:0 (compared as RGB x 255)."""
    recorded_ = reference(model)
    figures.image(AREA, model, "model input (sharpened crop)", sharpened(recorded_["crop"]), recorded_["model_input"])


@pytest.mark.parametrize(("model", "morph"), CASES, ids=IDS)
def test_model_outputs(parity_pool: ModelPool, model: str, morph: int, figures: Figures) -> None:
    """The stand-in run by slimfuse's store and pool on FaceFusion's model input, at the morph asked for."""
    recorded_ = reference(model)
    session = parity_pool.session(model)
    feeds = {"in_face:0": (recorded_["model_input"][..., ::-1].astype(np.float32) / np.float32(255))[None]}
    if any(tensor.name == "morph_value:0" for tensor in session.get_inputs()):
        feeds["morph_value:0"] = np.array([morph / 100], dtype=np.float32)
    face_mask, person, person_mask = (output[0] for output in session.run(None, feeds))
    figures.image(AREA, model, f"person's face, morph {morph}", person[..., ::-1] * 255,
                  recorded_[f"person_m{morph}"].astype(np.float64) * 255)
    for name, ours in (("face_mask", face_mask), ("person_mask", person_mask)):
        figures.image(AREA, model, f"{name.replace('_', ' ')}, morph {morph}", ours * 255,
                      recorded_[f"{name}_m{morph}"].astype(np.float64) * 255)


@pytest.mark.parametrize(("model", "morph"), CASES, ids=IDS)
def test_colour_match_and_model_mask(model: str, morph: int, figures: Figures) -> None:
    """FaceFusion's model outputs through slimfuse's de-normalisation, colour match and mask."""
    recorded_ = reference(model)
    person = recorded_[f"person_m{morph}"].astype(np.float32)[..., ::-1]
    output = match_colours(recorded_["crop"], to_rgb8(person))
    figures.image(AREA, model, f"colour-matched person, morph {morph}", output, recorded_[f"output_m{morph}"])
    mask = model_mask(recorded_[f"face_mask_m{morph}"].astype(np.float32),
                      recorded_[f"person_mask_m{morph}"].astype(np.float32))
    figures.image(AREA, model, f"model mask, morph {morph}", mask * 255, recorded_[f"model_mask_m{morph}"])


@pytest.mark.parametrize(("model", "morph"), CASES, ids=IDS)
def test_paste_back(model: str, morph: int, astronaut: np.ndarray, figures: Figures) -> None:
    """FaceFusion's output, box and model mask pasted by slimfuse into the target."""
    recorded_ = reference(model)
    alpha = np.minimum(mask_float(recorded_["box_mask"]), mask_float(recorded_[f"model_mask_m{morph}"]))
    pasted = paste_back(astronaut, recorded_[f"output_m{morph}"], alpha, recorded_["matrix"])
    x1, y1, x2, y2 = recorded_["paste_box"]
    figures.image(AREA, model, f"pasted frame, morph {morph}", pasted[y1:y2, x1:x2], recorded_[f"frame_m{morph}"])


@pytest.mark.parametrize(("model", "morph"), CASES, ids=IDS)
def test_whole_swap(parity_pool: ModelPool, model: str, morph: int, astronaut: np.ndarray,
                    figures: Figures) -> None:
    """slimfuse's processor from the fixed geometry: crop, model, colour match, its mask with the shared box, paste."""
    recorded_ = reference(model)
    swapper = processor(parity_pool, model, morph)
    swapper.prepare(())
    crop: FaceCrop = swapper.crop(astronaut, mesh_face("target"))
    (result,) = swapper.process([crop], None)
    box = blurred_box(swapper.size, swapper.size, 0.3)
    pasted = paste_back(astronaut, result.image, np.minimum(box, result.alpha), crop.crop_from_frame)
    x1, y1, x2, y2 = recorded_["paste_box"]
    figures.image(AREA, model, f"whole swap, morph {morph} (slimfuse's stages chained)", pasted[y1:y2, x1:x2],
                  recorded_[f"frame_m{morph}"])


def test_the_morph_moves_the_face(parity_pool: ModelPool, astronaut: np.ndarray) -> None:
    """--deep-swapper-morph reaches a file that takes it: 25 and 100 give different faces."""
    model = standins.DEEP_SWAPPERS[0].name
    faces = []
    for morph in (25, 100):
        swapper = processor(parity_pool, model, morph)
        (result,) = swapper.process([swapper.crop(astronaut, mesh_face("target"))], None)
        faces.append(result.image.astype(np.float64))
    assert np.abs(faces[0] - faces[1]).mean() > 1.0

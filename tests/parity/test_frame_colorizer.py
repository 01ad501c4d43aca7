"""Parity with FaceFusion 3.8.1's frame colouriser, its five models, stage by stage (the recorded stages:
tools/facefusion_reference/record_frame_colorizer.py: a 280 x 180 cut of the astronaut, each model at its own
--frame-colorizer-size, 192 to 512, blend 80).

slimfuse's FrameColorizer runs the parity stand-ins, loaded through a store. The model's input, its output stretched
over the frame, the colours joined to the frame and the blend are compared with FaceFusion's. The ddcolor family
joins the colours to the frame's own L as FaceFusion does. The deoldify family is the one deliberate difference:
FaceFusion joins its colours to the frame's blue channel, slimfuse to the frame's 8-bit LAB lightness; the recorder
also ran FaceFusion's own join on the frame with its blue channel replaced by that lightness, which slimfuse's
result is compared with, and the figure against FaceFusion's plain result is given as a note.
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from parity import standins
from parity.reference import Figures, psnr, recorded, standin_pool
from slimfuse.config import FrameColorizerOptions
from slimfuse.models.neural.frame_colorizers import TYPES
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.frame_colorize import FrameColorizer, join_colours, model_input

AREA = "frame_colorizer"
MODELS = tuple(contract.name for contract in standins.FRAME_COLORIZERS)
BLEND = 80
STRIDE = 4


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return standin_pool(tmp_path_factory.mktemp("parity_frame_colorizer"), store, MODELS)


def colorizer(pool: ModelPool, model: str, blend: int = BLEND) -> FrameColorizer:
    side = int(recorded(AREA, model)["size"])
    return FrameColorizer(pool, FrameColorizerOptions(frame_colorizer_model=model, frame_colorizer_blend=blend,
                                                      frame_colorizer_size=f"{side}x{side}"))


def cut(astronaut: np.ndarray, model: str) -> np.ndarray:
    x, y, width, height = recorded(AREA, model)["cut"]
    return np.ascontiguousarray(astronaut[y:y + height, x:x + width])


@pytest.mark.parametrize("model", MODELS)
def test_model_input(astronaut: np.ndarray, model: str, figures: Figures) -> None:
    tensor = model_input(cut(astronaut, model), TYPES[model], int(recorded(AREA, model)["size"]))
    theirs = recorded(AREA, model)["input"]
    limit, unit = (1e-5, "(RGB in [0, 1])") if TYPES[model] == "ddcolor" else (0.5, "levels")
    figures.within(AREA, model, f"model input (every {STRIDE}th pixel)", tensor[0, :, ::STRIDE, ::STRIDE], theirs,
                   limit, unit)


@pytest.mark.parametrize("model", MODELS)
def test_colours_stretched(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    frame = cut(astronaut, model)
    processor = colorizer(parity_pool, model)
    colours = processor.colours(model_input(frame, processor.kind, processor.side))
    stretched = cv2.resize(colours, frame.shape[1::-1], interpolation=cv2.INTER_LINEAR)
    unit = "LAB units" if processor.kind == "ddcolor" else "levels"
    figures.within(AREA, model, f"colours stretched over the frame (every {STRIDE}th pixel)",
                   stretched[::STRIDE, ::STRIDE], recorded(AREA, model)["colours"], 1e-3, unit)


@pytest.mark.parametrize("model", MODELS)
def test_joined_and_blended(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    reference = recorded(AREA, model)
    frame = cut(astronaut, model)
    processor = colorizer(parity_pool, model)
    joined = join_colours(frame, processor.colours(model_input(frame, processor.kind, processor.side)),
                          processor.kind)
    blended = processor.process_frame(frame)
    if processor.kind == "ddcolor":
        figures.image(AREA, model, "colours joined to the frame's L", joined, reference["merged"])
        figures.image(AREA, model, "blended (80 %)", blended, reference["blended"])
        return
    figures.image(AREA, model, "colours joined to the frame's lightness (FaceFusion's join given it)", joined,
                  reference["merged_lightness"])
    figures.image(AREA, model, "blended (80 %), FaceFusion's blend of that join", blended,
                  cv2.addWeighted(frame, 0.2, reference["merged_lightness"], 0.8, 0))
    figures.note(AREA, model, "FaceFusion's join to the blue channel (differs on purpose)",
                 f"{psnr(joined, reference['merged']):.1f} dB")


def test_blend_and_size_are_followed(parity_pool: ModelPool, astronaut: np.ndarray) -> None:
    """Blend 0 gives the frame back; blend 100 the joined colours; another size another result."""
    frame = cut(astronaut, "ddcolor")
    assert np.array_equal(colorizer(parity_pool, "ddcolor", blend=0).process_frame(frame), frame)
    whole = colorizer(parity_pool, "ddcolor", blend=100)
    joined = join_colours(frame, whole.colours(model_input(frame, whole.kind, whole.side)), whole.kind)
    assert np.array_equal(whole.process_frame(frame), joined)
    other = FrameColorizer(parity_pool, FrameColorizerOptions(frame_colorizer_model="ddcolor",
                                                              frame_colorizer_size="192x192"))
    assert np.abs(other.process_frame(frame).astype(int) - joined).mean() > 0.5

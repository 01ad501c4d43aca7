"""Parity with FaceFusion 3.8.1's frame enhancer, real_esrgan_x2 and real_esrgan_x4 (the recorded stages:
tools/facefusion_reference/record_frame_enhancer.py, on a 240 x 48 cut of the astronaut).

slimfuse's FrameEnhancer runs the parity stand-ins, loaded through a store. The two tile differently, by design:
- FaceFusion pads the frame with 24 px of black (more at the right and bottom, to whole tiles), cuts 256 px tiles
  every 240 px and keeps each tile's centre (8 px off each side); slimfuse cuts `--frame-enhancer-tile-size` tiles
  inside the frame (a frame smaller than a tile is padded by repeating its edge), spreads them evenly with at least
  `--frame-enhancer-tile-overlap` shared pixels and fades them into each other.
- FaceFusion truncates the model's output to whole levels; slimfuse keeps it in float and rounds once at the end.
- FaceFusion gives the frame at the model's scale; slimfuse by default averages it back to the frame's size
  (`--frame-enhancer-keep-scale` keeps the scale).
So the model's output is compared per tile on FaceFusion's tiles, and the joined frame with slimfuse tiling
FaceFusion's padded frame exactly as FaceFusion does (tiles at the same places, the same padding). With its own
tiling, slimfuse's frame agrees except within EDGE pixels of the frame's border, where FaceFusion's model sees black
and slimfuse's sees the model's own zero padding or the repeated edge: both guesses of what lies outside the frame.
"""
from __future__ import annotations

from functools import partial

import cv2
import numpy as np
import pytest

from parity import standins
from parity.reference import Figures, recorded, standin_pool
from slimfuse.config import EnhanceOptions
from slimfuse.models.neural.frame_enhancers import SCALES
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.frame_enhance import FrameEnhanceOptions, FrameEnhancer

AREA = "frame_enhancer"

MODELS = tuple(contract.name for contract in standins.FRAME_ENHANCERS)
BLEND = 80
PAD = 24
"""Black pixels FaceFusion puts before the frame on the top and the left (its tile border 16 plus margin 8)."""
EDGE = 2
"""Input pixels along the frame's border where the two programs' models see different surroundings (the stand-ins
look 2 pixels around; the real models further)."""


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("parity_frame_enhancer")
    return standin_pool(root, store, MODELS)


def frame_enhancer(pool: ModelPool, model: str, tile: int = 256, overlap: int = 24, blend: int = BLEND,
                   keep_scale: bool = True) -> FrameEnhancer:
    """The frame enhancer as a run builds it (chain.py), from the run's options."""
    options = EnhanceOptions(frame_enhancer_model=model, frame_enhancer_blend=blend,
                             frame_enhancer_tile_overlap=overlap, frame_enhancer_keep_scale=keep_scale)
    return FrameEnhancer(partial(pool.session, model), SCALES[model], FrameEnhanceOptions.of(options, tile))


def cut(astronaut: np.ndarray, model: str) -> np.ndarray:
    x, y, width, height = recorded("frame_enhancer", model)["cut"]
    return astronaut[y:y + height, x:x + width]


def padded(frame: np.ndarray, model: str) -> np.ndarray:
    """The frame as FaceFusion tiles it: black around, PAD before, whole tiles' worth after."""
    tiles = recorded("frame_enhancer", model)["tiles"]
    size, border, margin = (int(value) for value in recorded("frame_enhancer", model)["tile_size"])
    step = size - 2 * margin
    height, width = (step * ((side + 2 * border) // step + 1) + 2 * margin for side in frame.shape[:2])
    assert len(tiles) == (height - 2 * margin) // step * ((width - 2 * margin) // step)
    canvas = np.zeros((height, width, 3), dtype=np.uint8)
    canvas[PAD:PAD + frame.shape[0], PAD:PAD + frame.shape[1]] = frame
    return canvas


def inner(image: np.ndarray, pixels: int) -> np.ndarray:
    return image[pixels:-pixels, pixels:-pixels]


@pytest.mark.parametrize("model", MODELS)
def test_tiles_and_tile_outputs(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    """FaceFusion's tiles are the padded frame's; each, run alone through slimfuse (one whole tile: no fading),
    gives FaceFusion's output for it."""
    reference = recorded("frame_enhancer", model)
    canvas = padded(cut(astronaut, model), model)
    size, _, margin = (int(value) for value in reference["tile_size"])
    starts = range(0, canvas.shape[1] - 2 * margin, size - 2 * margin)
    assert np.array_equal(reference["tiles"], np.stack([canvas[:, x:x + size] for x in starts]))
    enhancer = frame_enhancer(parity_pool, model, blend=100)
    for index, (tile, theirs) in enumerate(zip(reference["tiles"], reference["tile_outputs"], strict=True)):
        figures.image(AREA, model, f"output of FaceFusion's tile {index}", enhancer.enhance(tile), theirs)


@pytest.mark.parametrize("model", MODELS)
def test_joined_on_facefusions_tiling(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    """slimfuse on FaceFusion's padded frame, with FaceFusion's tiles (256 px, every 240 px): the joined frame,
    and blended with the frame scaled plainly (inside, where the plain scaling sees the same pixels)."""
    reference = recorded("frame_enhancer", model)
    frame = cut(astronaut, model)
    scale = SCALES[model]
    inside = np.s_[PAD * scale:(PAD + frame.shape[0]) * scale, PAD * scale:(PAD + frame.shape[1]) * scale]
    joined = frame_enhancer(parity_pool, model, overlap=16, blend=100).enhance(padded(frame, model))[inside]
    figures.image(AREA, model, "joined frame, FaceFusion's tiling", joined, reference["joined"])
    blended = frame_enhancer(parity_pool, model, overlap=16).enhance(padded(frame, model))[inside]
    figures.image(AREA, model, "blended frame, FaceFusion's tiling", inner(blended, scale),
                  inner(reference["blended"], scale))


@pytest.mark.parametrize(("tile", "overlap"), [(256, 24), (32, 16)])
@pytest.mark.parametrize("model", MODELS)
def test_own_tiling(parity_pool: ModelPool, astronaut: np.ndarray, model: str, tile: int, overlap: int, figures: Figures) -> None:
    """slimfuse's own tiles (the defaults, 256 px overlapping by 24: one tile, the frame's edge repeated to fill it;
    32 px overlapping by 16: 2 x 14 tiles faded into each other) give FaceFusion's frame but along the border."""
    reference = recorded("frame_enhancer", model)
    frame = cut(astronaut, model)
    edge = EDGE * SCALES[model]
    joined = frame_enhancer(parity_pool, model, tile, overlap, blend=100).enhance(frame)
    figures.image(AREA, model, f"joined frame, {tile} px tiles", inner(joined, edge), inner(reference["joined"], edge))
    blended = frame_enhancer(parity_pool, model, tile, overlap).enhance(frame)
    figures.image(AREA, model, f"blended frame, {tile} px tiles", inner(blended, edge),
                  inner(reference["blended"], edge))


@pytest.mark.parametrize("model", MODELS)
def test_frame_size_kept(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    """By default slimfuse gives the frame's size: FaceFusion's joined frame averaged over each input pixel's block,
    blended with the frame itself."""
    reference = recorded("frame_enhancer", model)
    frame = cut(astronaut, model)
    averaged = cv2.resize(reference["joined"], frame.shape[1::-1], interpolation=cv2.INTER_AREA).astype(np.float64)
    expected = frame + BLEND / 100 * (averaged - frame)
    result = frame_enhancer(parity_pool, model, keep_scale=False).enhance(frame)
    assert result.shape == frame.shape
    figures.image(AREA, model, "frame at its own size", inner(result, EDGE), inner(expected, EDGE))

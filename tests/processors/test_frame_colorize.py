"""The frame colouriser (--processors frame_colorizer) with the parity stand-ins: a grey frame gets colours and keeps
its lightness, at any --frame-colorizer-size; a run needs no source photo and no face, and runs after a face stage
when listed after it; the memory plan sizes the model's activations at the chosen size."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

import neural_models as nm
from parity import standins
from parity.reference import standin_pool
from scenes import swap_file
from slimfuse.config import FrameColorizerOptions
from slimfuse.errors import UsageError
from slimfuse.memory.plan import GENERATOR_KINDS, model_need
from slimfuse.models.catalog import Catalog
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.frame_colorize import FrameColorizer
from slimfuse.samples import ASTRONAUT_FACE

MODELS = ("ddcolor", "deoldify")


@pytest.fixture(scope="module")
def colour_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return standin_pool(tmp_path_factory.mktemp("frame_colorizer"), store, MODELS)


def grey(astronaut: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(cv2.cvtColor(astronaut, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)


@pytest.mark.parametrize("size", ["192x192", "512x512"])
@pytest.mark.parametrize("model", MODELS)
def test_a_grey_frame_gets_colours_and_keeps_its_lightness(colour_pool: ModelPool, astronaut: np.ndarray, model: str,
                                                           size: str) -> None:
    frame = grey(astronaut[:300, :420])
    colorizer = FrameColorizer(colour_pool, FrameColorizerOptions(frame_colorizer_model=model,
                                                                  frame_colorizer_size=size))
    colorizer.load()
    assert colorizer.models == (model,) and colorizer.frame_scale == 1
    coloured = colorizer.process_frame(frame, 0.0)
    assert coloured.shape == frame.shape and coloured.dtype == np.uint8
    before, after = (cv2.cvtColor(image, cv2.COLOR_RGB2LAB).astype(int) for image in (frame, coloured))
    assert np.abs(after[..., 1:] - 128).mean() > 3  # coloured
    assert np.abs(after[..., 0] - before[..., 0]).mean() < 1.5  # the same lightness


def test_a_transparent_frame_keeps_its_alpha(colour_pool: ModelPool, astronaut: np.ndarray) -> None:
    """After a background remover that made the background transparent, the colouriser colours the picture only."""
    frame = grey(astronaut[:200, :300])
    alpha = np.tile(np.arange(300, dtype=np.uint8)[None, :, None], (200, 1, 1))
    colorizer = FrameColorizer(colour_pool, FrameColorizerOptions(frame_colorizer_model="deoldify"))
    coloured = colorizer.process_frame(np.dstack([frame, alpha]), 0.0)
    assert coloured.shape == (200, 300, 4) and np.array_equal(coloured[..., 3:], alpha)
    assert np.array_equal(coloured[..., :3], colorizer.process_frame(frame, 0.0))


def test_other_models_and_sizes_are_refused() -> None:
    with pytest.raises(UsageError, match="--frame-colorizer-model: invalid choice: 'gfpgan_1.4'"):
        FrameColorizerOptions(frame_colorizer_model="gfpgan_1.4")
    with pytest.raises(UsageError, match="--frame-colorizer-size"):
        FrameColorizerOptions(frame_colorizer_size="320x320")


def test_a_run_colours_the_whole_frame_after_the_face_stage(models_dir: Path, astronaut: np.ndarray,
                                                            tmp_path: Path) -> None:
    standins.write("ddcolor", models_dir)
    standins.write("fran", models_dir)
    nm.save(nm.fairface_by_tint(), models_dir, "fairface")
    target = tmp_path / "grey.png"
    Image.fromarray(grey(astronaut)).save(target)

    def run(*processors: str) -> np.ndarray:
        out = swap_file([], target, tmp_path / f"{len(processors)}.png", processors=processors,
                        frame_colorizer_blend=60, models_dir=models_dir)
        return np.asarray(Image.open(out).convert("RGB"))

    coloured, aged_then_coloured = run("frame_colorizer"), run("age_modifier", "frame_colorizer")
    lab = cv2.cvtColor(coloured, cv2.COLOR_RGB2LAB).astype(int)
    assert np.abs(lab[..., 1:] - 128).mean() > 2
    assert np.abs(lab[:40, :40, 1:] - 128).mean() > 1  # far from any face too
    x0, y0, x1, y1 = ASTRONAUT_FACE
    face = np.s_[y0:y1, x0:x1]
    assert np.abs(aged_then_coloured[face].astype(int) - coloured[face]).mean() > 3
    assert np.abs(aged_then_coloured[:40, :40].astype(int) - coloured[:40, :40]).max() <= 1


def test_the_memory_plan_sizes_the_colouriser_at_its_size() -> None:
    assert {"age_modifier", "frame_colorizer"} <= GENERATOR_KINDS
    spec = Catalog().get("ddcolor")
    small, large = (model_need(spec, 1 << 20, side) for side in (192, 512))
    assert large.item_bytes == small.item_bytes * (512 * 512) // (192 * 192) and not large.batched
    styleganex = model_need(Catalog().get("styleganex_age"), 1 << 20)
    assert styleganex.item_bytes == 4 * 3 * 384 * 384 * 256 and styleganex.batched is False

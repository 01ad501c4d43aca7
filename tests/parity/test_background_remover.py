"""Parity with FaceFusion 3.8.1's background remover, every model of its list (the recorded stages:
tools/facefusion_reference/record_background_remover.py, on a 240 x 200 cut of the astronaut).

slimfuse's BackgroundRemover runs the parity stand-ins, loaded through a store, with the options a run gives it:
- the alpha (FaceFusion's defaults: no fill, no despill), and corridor_key's foreground colours;
- the frame with a half-transparent fill colour over the background and a despill colour taken off: FaceFusion's
  formula, which slimfuse's composition (the frame as the background, the fill over it at its alpha) reduces to.
  FaceFusion truncates once in float, slimfuse rounds twice through OpenCV's blends: a level apart at most;
- the alpha FaceFusion writes into a transparent output, against slimfuse's RGBA.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from parity import standins
from parity.reference import Figures, recorded, standin_pool
from slimfuse.config import BackgroundOptions
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.background import BackgroundRemover

AREA = "background_remover"
MODELS = tuple(contract.name for contract in standins.REMOVERS)


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return standin_pool(tmp_path_factory.mktemp("parity_background_remover"), store, MODELS)


def remover(pool: ModelPool, model: str, **options: object) -> BackgroundRemover:
    """The stage as a run builds it: its model's session from the pool, the run's options."""
    return BackgroundRemover(partial(pool.session, model), model,
                             BackgroundOptions(background_remover_model=model, **options))  # type: ignore[arg-type]


def cut(astronaut: np.ndarray, model: str) -> np.ndarray:
    x, y, width, height = recorded(AREA, model)["cut"]
    return np.ascontiguousarray(astronaut[y:y + height, x:x + width])


@pytest.mark.parametrize("model", MODELS)
def test_alpha(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    reference = recorded(AREA, model)
    alpha, colours = remover(parity_pool, model).segment(cut(astronaut, model))
    figures.image(AREA, model, "alpha", alpha, reference["mask"])
    if "kept" in reference:
        figures.image(AREA, model, "foreground colours", colours, reference["kept"])


@pytest.mark.parametrize("model", MODELS)
def test_fill_and_despill(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    reference = recorded(AREA, model)
    stage = remover(parity_pool, model, background_remover_fill_color=tuple(int(v) for v in reference["fill"]),
                    background_remover_despill_color=tuple(int(v) for v in reference["despill"]))
    assert not stage.transparent
    figures.image(AREA, model, "filled and despilled", stage.process_frame(cut(astronaut, model)),
                  reference["filled"])


@pytest.mark.parametrize("model", ("modnet", "u2net_cloth", "corridor_key_1024"))
def test_transparent_output(parity_pool: ModelPool, astronaut: np.ndarray, model: str, figures: Figures) -> None:
    """No fill and no blur: RGBA, its alpha the one FaceFusion writes (its colours: the frame's, or corridor_key's
    foreground)."""
    reference = recorded(AREA, model)
    frame = cut(astronaut, model)
    rgba = remover(parity_pool, model).process_frame(frame)
    assert rgba.shape == (*frame.shape[:2], 4)
    figures.image(AREA, model, "transparent output's alpha", rgba[..., 3], reference["process_mask"])
    if "kept" not in reference:
        assert np.array_equal(rgba[..., :3], frame)
    else:  # corridor_key's foreground is the model's float output: a CPU may round a value or two the other way
        off = np.abs(rgba[..., :3].astype(np.int16) - reference["kept"])
        assert off.max() <= 1 and np.count_nonzero(off) <= 0.001 * off.size

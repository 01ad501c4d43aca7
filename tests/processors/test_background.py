"""The background remover's stage on the packaged portraits with the embedded model: the person found (against the
hand-checked masks), and each background (transparent, colour, blur, a half-opaque colour) and the despill."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest

from slimfuse.bench.background import hand_mask, mask_iou
from slimfuse.config import BackgroundOptions, RunConfig, color_from
from slimfuse.models.choices import SELFIE_SEGMENTATION
from slimfuse.models.pool import ModelPool
from slimfuse.processors.background import BackgroundRemover, despill

MIN_IOU = {"grace_hopper": 0.97, "astronaut": 0.95}
"""Measured 0.982 and 0.962 (slimfuse bench background)."""


def remover(pool: ModelPool, **options: object) -> BackgroundRemover:
    return BackgroundRemover(partial(pool.session, SELFIE_SEGMENTATION), SELFIE_SEGMENTATION,
                             BackgroundOptions(**options))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def portraits(grace_hopper: np.ndarray, astronaut: np.ndarray) -> dict[str, np.ndarray]:
    return {"grace_hopper": grace_hopper, "astronaut": astronaut}


def test_the_embedded_model_finds_the_person(pool: ModelPool, portraits: dict[str, np.ndarray]) -> None:
    for name, photo in portraits.items():
        alpha, colours = remover(pool).segment(photo)
        assert alpha.shape == photo.shape[:2] and alpha.dtype == np.uint8 and colours is photo
        assert mask_iou(alpha, hand_mask(name)) >= MIN_IOU[name], name


def test_a_transparent_background_is_the_alpha(pool: ModelPool, grace_hopper: np.ndarray) -> None:
    stage = remover(pool)
    assert stage.transparent and stage.models == (SELFIE_SEGMENTATION,) and stage.frame_scale == 1
    rgba = stage.process_frame(grace_hopper, 0.0)
    assert rgba.shape == (*grace_hopper.shape[:2], 4)
    assert np.array_equal(rgba[..., :3], grace_hopper)
    assert np.array_equal(rgba[..., 3], stage.segment(grace_hopper)[0])


def test_colour_blur_and_half_opaque_backgrounds(pool: ModelPool, grace_hopper: np.ndarray) -> None:
    alpha = remover(pool).segment(grace_hopper)[0]
    person, background = alpha == 255, alpha == 0
    assert person.mean() > 0.4 and background.mean() > 0.3

    green = remover(pool, background_remover_fill_color=(0, 177, 64, 255)).process_frame(grace_hopper)
    assert green.shape == grace_hopper.shape
    assert np.array_equal(green[background], np.broadcast_to([0, 177, 64], green[background].shape))
    assert np.array_equal(green[person], grace_hopper[person])

    blurred = remover(pool, background_remover_blur=12).process_frame(grace_hopper)
    assert np.array_equal(blurred[person], grace_hopper[person])
    sharpness = [float(np.abs(np.diff(image[background].astype(np.float32), axis=0)).mean())
                 for image in (grace_hopper, blurred)]
    assert sharpness[1] < sharpness[0] / 2

    half = remover(pool, background_remover_fill_color=(255, 255, 255, 128)).process_frame(grace_hopper)
    expected = grace_hopper[background] * (1 - 128 / 255) + 255 * (128 / 255)
    assert np.abs(half[background].astype(np.float64) - expected).max() <= 1.0


def test_despill_takes_the_colour_cast_off() -> None:
    greenish = np.array([[[100, 200, 120], [90, 80, 70]]], dtype=np.uint8)
    assert despill(greenish, (0, 255, 0, 0)) is greenish
    cleaned = despill(greenish, (0, 255, 0, 255))
    assert cleaned[0, 0].tolist() == [100, 110, 120]  # green pulled down to the mean of red and blue
    assert cleaned[0, 1].tolist() == [90, 80, 70]  # green already below that mean: untouched


def test_colours_are_read_as_facefusion_reads_them() -> None:
    assert color_from([7]) == (7, 7, 7, 255)
    assert color_from([1, 2]) == (1, 2, 1, 255)
    assert color_from([1, 2, 3]) == (1, 2, 3, 255)
    assert color_from([1, 2, 3, 4]) == (1, 2, 3, 4)
    assert RunConfig().background.transparent
    assert not RunConfig.from_options(background_remover_blur=4).background.transparent
    assert not RunConfig.from_options(background_remover_fill_color=[0, 0, 255]).background.transparent
    config = RunConfig.from_options(processors=["background_remover"])
    assert config.transparent_output and not config.needs_source


def test_facefusions_ini_keys(tmp_path: Path) -> None:
    ini = tmp_path / "facefusion.ini"
    ini.write_text("[processors]\nbackground_remover_model = modnet\nbackground_remover_fill_color = 0 255 0\n"
                   "background_remover_despill_color =\n")
    options = RunConfig.from_options(config_path=ini).background
    assert options.background_remover_model == "modnet"
    assert options.background_remover_fill_color == (0, 255, 0, 255)
    assert options.background_remover_despill_color == (0, 0, 0, 0)

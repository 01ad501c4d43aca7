"""Pixel boost: interleaved sub-images re-assemble exactly."""
from __future__ import annotations

import numpy as np
import pytest

from slimfuse.models.neural.swappers import PIXEL_BOOSTS
from slimfuse.processors.pixel_boost import boost_factor, explode, implode, valid_boosts


@pytest.mark.parametrize(("model_size", "boost"), [(128, 128), (128, 256), (128, 384), (128, 1024), (256, 512),
                                                   (256, 768), (512, 1024)])
def test_tiles_reassemble_exactly(model_size: int, boost: int) -> None:
    factor = boost_factor(model_size, boost)
    crop = np.random.default_rng(boost).integers(0, 256, (boost, boost, 3), dtype=np.uint8)
    tiles = implode(crop, factor)
    assert tiles.shape == (factor * factor, model_size, model_size, 3)
    for a in range(factor):
        for b in range(factor):  # sub-image a*N + b is every N-th pixel from offset (a, b)
            assert np.array_equal(tiles[a * factor + b], crop[a::factor, b::factor])
    assert np.array_equal(explode(tiles, factor), crop)


def test_single_channel_and_float_crops() -> None:
    crop = np.random.default_rng(0).random((384, 384)).astype(np.float32)
    assert np.array_equal(explode(implode(crop, 3), 3), crop)


def test_boost_sizes_must_be_multiples_of_the_model_size() -> None:
    assert boost_factor(128, None) == 1 and boost_factor(256, 1024) == 4
    assert valid_boosts(128) == list(PIXEL_BOOSTS)
    assert valid_boosts(256) == [256, 512, 768, 1024] and valid_boosts(512) == [512, 1024]
    with pytest.raises(ValueError, match="choose one of 256, 512, 768, 1024"):
        boost_factor(256, 384)
    with pytest.raises(ValueError):
        boost_factor(256, 128)

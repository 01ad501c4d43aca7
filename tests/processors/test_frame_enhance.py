"""Tiled whole-frame enhancement on stand-in super-resolution models with Real-ESRGAN's tensor names.

What is asserted, and why it can be exact:
- A plain bilinear resize (ONNX Resize, half-pixel centres, edge clamped) gives the same value for a pixel
  whether it is computed in a tile or in the whole frame, except within a pixel or two of a tile's inner edge,
  which the margin leaves out. Where tiles overlap they agree, and the running blend then rounds to exactly the
  rounded value, so tiled == untiled, bit for bit ("compatible borders": a frame's own edge is clamped in both).
- A resize followed by a 3x3 convolution (zero padding) also agrees inside the margin, but the convolution's
  sums may be ordered differently for a tile than for the frame: within 1 grey level, nearly all equal.
- A frame smaller than a tile is padded by repeating its edge; the resize clamps to its edge: the same values
  but not the same float rounding, so its last row and column are within 1 grey level, the rest exact.
- Memory: tracemalloc's peak over the run, less the result, must not grow with the frame and stay a small
  multiple of one tile's output, while one untiled run on the same frame needs many times more.
"""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import cv2
import numpy as np
import pytest

import neural_models as nm
from slimfuse.models.neural.frame_enhancers import SCALES
from slimfuse.processors.frame_enhance import FrameEnhanceOptions, FrameEnhancer, axis_tiles, tile_starts


def _model(tmp_path: Path, name: str, blur: bool = False, batch: int | str = "batch"):  # type: ignore[no-untyped-def]
    """`name`'s tensors; a bilinear resize by the model's scale, optionally followed by a 3x3 blur."""
    return nm.session_of(nm.resize_enhancer(name, blur, batch), tmp_path, f"{name}-{blur}-{batch}")


def _untiled(session, frame: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The model run once on the whole frame, as float32 0..255 at its scale."""
    tensor = frame.astype(np.float32).transpose(2, 0, 1)[None] / np.float32(255)
    return np.clip(session.run(None, {"input": tensor})[0][0].transpose(1, 2, 0) * np.float32(255), 0, 255)


def _options(**changes: object) -> FrameEnhanceOptions:
    settings: dict[str, object] = {"tile_size": 96, "overlap": 24, "margin": 4, "batch_size": 3, "blend": 100,
                                   "keep_scale": True}
    settings.update(changes)
    return FrameEnhanceOptions(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["real_esrgan_x2", "real_esrgan_x4"])
def test_tiled_resize_equals_the_untiled_model_exactly(tmp_path: Path, grace_hopper: np.ndarray, name: str) -> None:
    session = _model(tmp_path, name)
    expected = np.rint(_untiled(session, grace_hopper)).astype(np.uint8)
    tiled = FrameEnhancer(lambda: session, SCALES[name], _options()).enhance(grace_hopper)
    assert tiled.shape == expected.shape == (600 * SCALES[name], 512 * SCALES[name], 3)
    np.testing.assert_array_equal(tiled, expected)


def test_a_frame_smaller_than_a_tile_is_padded_like_the_resize(tmp_path: Path, astronaut: np.ndarray) -> None:
    session = _model(tmp_path, "real_esrgan_x2", batch=1)
    small = np.ascontiguousarray(astronaut[60:160, 170:250])
    expected = np.rint(_untiled(session, small)).astype(np.uint8)
    result = FrameEnhancer(lambda: session, 2, _options(tile_size=128)).enhance(small)
    # The padded side's last pixel: repeating the edge equals the resize's clamp in value, not in float rounding
    # (ties such as 0.75 a + 0.25 b = x.5 are common), so one grey level there; exact everywhere else.
    np.testing.assert_array_equal(result[:-1, :-1], expected[:-1, :-1])
    assert np.abs(result.astype(int) - expected).max() <= 1


def test_a_convolution_stays_within_one_grey_level(tmp_path: Path, astronaut: np.ndarray) -> None:
    session = _model(tmp_path, "real_esrgan_x2", blur=True)
    expected = _untiled(session, astronaut)
    tiled = FrameEnhancer(lambda: session, 2, _options(tile_size=80, overlap=20)).enhance(astronaut)
    difference = np.abs(tiled.astype(np.float32) - expected)
    assert difference.max() <= 1.0 and (difference <= 0.5 + 1e-4).mean() > 0.999


def test_back_at_the_input_size(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    session = _model(tmp_path, "real_esrgan_x4")
    full = _untiled(session, grace_hopper)
    expected = full.reshape(600, 4, 512, 4, 3).mean(axis=(1, 3))  # what INTER_AREA does at a whole factor
    result = FrameEnhancer(lambda: session, 4, _options(keep_scale=False)).enhance(grace_hopper)
    difference = np.abs(result.astype(np.float32) - expected)
    assert result.shape == grace_hopper.shape and difference.max() <= 1.0 and (difference <= 0.5 + 1e-3).mean() > 0.999
    other = FrameEnhancer(lambda: session, 4, _options(keep_scale=False, output_size=(300, 350))).enhance(grace_hopper)
    assert other.shape == (350, 300, 3)


def test_blend_mixes_in_the_plainly_scaled_frame(tmp_path: Path, astronaut: np.ndarray) -> None:
    session = _model(tmp_path, "real_esrgan_x2", blur=True)
    plain = FrameEnhancer(lambda: session, 2, _options(blend=0)).enhance(astronaut)
    np.testing.assert_array_equal(plain, cv2.resize(astronaut, (1024, 1024), interpolation=cv2.INTER_LINEAR))
    same = FrameEnhancer(lambda: session, 2, _options(blend=0, keep_scale=False)).enhance(astronaut)
    np.testing.assert_array_equal(same, astronaut)
    half = FrameEnhancer(lambda: session, 2, _options(blend=50)).enhance(astronaut).astype(np.float32)
    full = FrameEnhancer(lambda: session, 2, _options(blend=100)).enhance(astronaut).astype(np.float32)
    assert np.abs(half - (plain + full) / 2).max() <= 1.0


@pytest.mark.parametrize("length", [97, 200, 257, 400, 1000])
def test_tile_weights_cover_every_pixel_once_and_skip_the_margins(length: int) -> None:
    tile, overlap, margin = 96, 24, 4
    axis = axis_tiles(length, tile, overlap, margin)
    starts = tile_starts(length, tile, overlap)
    assert axis.starts == starts and starts[0] == 0 and starts[-1] + tile >= length
    total = np.zeros(max(length, tile))
    for k, start in enumerate(starts):
        total[start:start + tile] += axis.weights[k]
        if k > 0:
            assert starts[k - 1] + tile - start >= overlap  # neighbours share at least `overlap` pixels
            assert axis.weights[k][:margin].max() == 0.0  # nothing from next to an inner edge
        if k < len(starts) - 1:
            assert axis.weights[k][-margin:].max() == 0.0
        np.testing.assert_allclose(axis.before[k], total[start:start + tile] - axis.weights[k], atol=1e-6)
    np.testing.assert_allclose(total[:length], 1.0, atol=1e-6)


def _excess_memory(enhancer: FrameEnhancer, frame: np.ndarray) -> int:
    """Peak bytes traced during the run beyond the result itself."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = enhancer.enhance(frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - result.nbytes


@pytest.mark.parametrize("keep_scale", [True, False])
def test_memory_follows_the_tile_not_the_frame(tmp_path: Path, grace_hopper: np.ndarray, keep_scale: bool) -> None:
    session = _model(tmp_path, "real_esrgan_x2")
    options = _options(tile_size=128, overlap=16, batch_size=2, keep_scale=keep_scale)
    enhancer = FrameEnhancer(lambda: session, 2, options)
    large = cv2.resize(grace_hopper, (1024, 1200), interpolation=cv2.INTER_LINEAR)
    small_excess, large_excess = _excess_memory(enhancer, grace_hopper), _excess_memory(enhancer, large)
    tile_output = options.batch_size * (128 * 2) ** 2 * 3 * 4  # one batch of float32 tiles at the model's scale
    assert large_excess <= 6 * tile_output
    assert large_excess <= small_excess + 0.05 * tile_output  # 4 times the pixels: only the weight vectors grow
    whole = FrameEnhancer(lambda: session, 2, _options(tile_size=600, overlap=16, keep_scale=keep_scale))
    assert _excess_memory(whole, grace_hopper) > 5 * large_excess  # one tile for all: arrays of the frame's size


def test_a_model_of_another_scale_is_refused(tmp_path: Path, astronaut: np.ndarray) -> None:
    with pytest.raises(ValueError, match="not a x4 model"):
        FrameEnhancer(lambda: _model(tmp_path, "real_esrgan_x2"), 4, _options()).enhance(astronaut)

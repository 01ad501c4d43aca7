"""Whole-frame super-resolution (`--frame-enhancer-model real_esrgan_x2|real_esrgan_x4`) on overlapping tiles.

Memory follows the tile, not the frame: the model only ever sees `batch_size` tiles of `tile_size` pixels, and
every array besides the result is a tile's size (plus a few weight vectors along the frame's sides).

- Tiles overlap by at least `overlap` pixels and are spread evenly, so the last one does not stick out.
- Each tile's weight is 0 for `margin` pixels at its inner edges (where a convolutional model sees the tile's
  edge instead of the picture), then ramps linearly to 1; the weights are normalised to sum to 1 at every
  pixel, so overlapping tiles fade into each other without a seam.
- Tiles are blended straight into the uint8 result, one at a time in row-major order, with the running
  weighted average out = out + f (tile - out), f = this tile's weight / the weight blended so far at that
  pixel. No float accumulator of the frame's size is needed; where the tiles agree the result is exactly the
  rounded tile value, elsewhere within a grey level or so of the float average (one rounding per tile).
- When the result goes back to the input's size, the weights are constant over each input pixel's
  scale x scale block, so each tile's output is averaged down to input pixels first (what INTER_AREA does at
  a whole factor) and blended there: nothing at the model's scale is larger than a tile.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from math import ceil

import cv2
import numpy as np
import onnxruntime as ort

from slimfuse.config import EnhanceOptions
from slimfuse.models.tensors import batch_axis_free


@dataclass(frozen=True)
class FrameEnhanceOptions:
    """The tiling and blend of the frame enhancer: the run's EnhanceOptions (--frame-enhancer-tile-overlap, -blend,
    -keep-scale, and the tile size its plan capped; see `of`) and the tiling's own settings."""

    tile_size: int
    """Side of the square tiles the model sees, in input pixels."""
    overlap: int
    """Least number of input pixels two neighbouring tiles share."""
    blend: int
    """Percent of the enhanced frame in the result; the rest is the frame scaled plainly."""
    margin: int = 4
    """Input pixels at a tile's inner edges that get no weight: the model's own border effects."""
    batch_size: int = 1
    """Most tiles per model call; one at a time for a model whose batch axis is fixed. Activation memory
    grows with it: 1 suits small GPUs."""
    keep_scale: bool = False
    """Give the frame at the model's scale (x2, x4) instead of scaling it back."""
    output_size: tuple[int, int] | None = None
    """(width, height) when not keeping the model's scale; None: the input's size (the memory-bounded way;
    another size goes through the frame at the model's scale)."""
    input_name: str = "input"

    def __post_init__(self) -> None:
        if self.tile_size < 16:
            raise ValueError(f"frame enhancer tile size must be at least 16, got {self.tile_size}")
        if not 2 * self.margin < self.overlap <= self.tile_size // 2:
            raise ValueError("frame enhancer tile overlap must exceed twice the margin and be at most half a tile")
        if not 0 <= self.margin < self.tile_size // 4:
            raise ValueError("frame enhancer tile margin must lie below a quarter of the tile size")
        if self.batch_size < 1 or not 0 <= self.blend <= 100:
            raise ValueError("frame enhancer batch size must be at least 1 and blend lie in 0-100")


    @classmethod
    def of(cls, options: EnhanceOptions, tile_size: int) -> FrameEnhanceOptions:
        """The run's frame enhancer options, on tiles of `tile_size` input pixels."""
        return cls(tile_size=tile_size, overlap=options.frame_enhancer_tile_overlap,
                   blend=options.frame_enhancer_blend, keep_scale=options.frame_enhancer_keep_scale)


@dataclass(frozen=True)
class AxisTiles:
    """Where the tiles lie along one side of the frame, and their weights per input pixel of each tile."""

    starts: tuple[int, ...]
    weights: np.ndarray
    """(tiles, tile_size) float32: each tile's normalised weight (0 past the frame's end)."""
    before: np.ndarray
    """(tiles, tile_size) float32: the summed weights of the earlier tiles, over each tile's pixels."""


def tile_starts(length: int, tile: int, overlap: int) -> tuple[int, ...]:
    """The fewest tiles that cover `length` with at least `overlap` shared pixels, spread evenly."""
    if length <= tile:
        return (0,)
    count = ceil((length - overlap) / (tile - overlap))
    return tuple(k * (length - tile) // (count - 1) for k in range(count))


def axis_tiles(length: int, tile: int, overlap: int, margin: int) -> AxisTiles:
    """The tiles along a side of `length` pixels and their weights (see the module's docstring)."""
    starts = tile_starts(length, tile, overlap)
    centres = np.arange(max(length, tile), dtype=np.float64) + 0.5
    ramp = overlap - 2 * margin
    raw = np.zeros((len(starts), centres.size))
    for k, start in enumerate(starts):
        end = start + tile
        inside = (centres > start) & (centres < min(end, length))
        # Distance to the tile's inner edges; an edge on the frame's border is no edge.
        to_left = centres - start if start > 0 else np.inf
        to_right = end - centres if end < length else np.inf
        raw[k] = np.where(inside, np.clip((np.minimum(to_left, to_right) - margin) / ramp, 0.0, 1.0), 0.0)
    total = raw.sum(axis=0)
    normalised = np.divide(raw, total, out=np.zeros_like(raw), where=total > 0)
    earlier = np.concatenate([np.zeros((1, centres.size)), np.cumsum(normalised, axis=0)[:-1]])
    spans = [slice(start, start + tile) for start in starts]
    return AxisTiles(
        starts=starts,
        weights=np.stack([normalised[k, span] for k, span in enumerate(spans)]).astype(np.float32),
        before=np.stack([earlier[k, span] for k, span in enumerate(spans)]).astype(np.float32),
    )


class FrameEnhancer:
    """The frame enhancer stage (a FrameProcessor): each frame enhanced tile by tile."""

    def __init__(self, session: Callable[[], ort.InferenceSession], scale: int, options: FrameEnhanceOptions,
                 model: str = "") -> None:
        """session: gives the model's session for each frame (a run's pool may release it between frames under a
        budget, and loads it again when asked); `scale`: how many times larger the model's output is per side
        (frame_enhancers.SCALES); `model`: its catalog name."""
        self.session = session
        self.scale = scale
        self.options = options
        self.model = model

    @property
    def models(self) -> tuple[str, ...]:
        return (self.model,) if self.model else ()

    def load(self) -> None:
        self.session()

    def process_frame(self, frame: np.ndarray, time: float) -> np.ndarray:
        return self.enhance(frame)

    @property
    def frame_scale(self) -> int:
        """How much larger the frames come out than they went in."""
        return self.scale if self.options.keep_scale else 1

    def enhance(self, frame: np.ndarray) -> np.ndarray:
        """The enhanced RGB uint8 frame: at the model's scale, the input's size or `output_size`."""
        options = self.options
        session = self.session()
        height, width = frame.shape[:2]
        at_model_scale = options.keep_scale or options.output_size not in (None, (width, height))
        factor = self.scale if at_model_scale else 1
        rows = axis_tiles(height, options.tile_size, options.overlap, options.margin)
        cols = axis_tiles(width, options.tile_size, options.overlap, options.margin)
        result = np.zeros((height * factor, width * factor, 3), dtype=np.uint8)
        jobs = [(i, j) for i in range(len(rows.starts)) for j in range(len(cols.starts))]
        step = options.batch_size if batch_axis_free(session) else 1
        for batch in _chunks(jobs, step):
            cut = np.stack([self._cut(frame, rows.starts[i], cols.starts[j]) for i, j in batch])
            for (i, j), tile in zip(batch, self._run(session, cut, factor), strict=True):
                _blend_tile(result, tile, rows, cols, i, j, factor)
        if at_model_scale and not options.keep_scale and options.output_size is not None:
            return cv2.resize(result, options.output_size, interpolation=cv2.INTER_AREA)
        return result

    def _cut(self, frame: np.ndarray, y: int, x: int) -> np.ndarray:
        """A whole tile; a frame smaller than a tile is padded by repeating its edge (what a resize does)."""
        size = self.options.tile_size
        tile = frame[y:y + size, x:x + size]
        short_y, short_x = size - tile.shape[0], size - tile.shape[1]
        if short_y or short_x:
            tile = cv2.copyMakeBorder(tile, 0, short_y, 0, short_x, cv2.BORDER_REPLICATE)
        return tile

    def _run(self, session: ort.InferenceSession, tiles: np.ndarray, factor: int) -> np.ndarray:
        """The model's output for a batch of uint8 tiles as float32 0..255, at `factor` times the tile size."""
        tensor = np.ascontiguousarray(tiles.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255)
        output = session.run(None, {self.options.input_name: tensor})[0]
        count, size, s = len(tiles), self.options.tile_size, self.scale
        if output.shape != (count, 3, size * s, size * s):
            raise ValueError(f"the frame enhancer gave {output.shape} for {tensor.shape}: not a x{s} model")
        enhanced = np.clip(output.transpose(0, 2, 3, 1) * np.float32(255), 0, 255)
        if factor == 1:
            enhanced = enhanced.reshape(count, size, s, size, s, 3).mean(axis=(2, 4), dtype=np.float32)
        if self.options.blend == 100:
            return enhanced
        plain = tiles.astype(np.float32) if factor == 1 else _upscaled(tiles, factor)
        return plain + np.float32(self.options.blend / 100) * (enhanced - plain)


def _upscaled(tiles: np.ndarray, factor: int) -> np.ndarray:
    """The tiles scaled plainly (bilinear), for blending with the model's output."""
    height, width = tiles.shape[1] * factor, tiles.shape[2] * factor
    return np.stack([cv2.resize(tile, (width, height), interpolation=cv2.INTER_LINEAR) for tile in tiles]).astype(
        np.float32)


def _blend_tile(result: np.ndarray, tile: np.ndarray, rows: AxisTiles, cols: AxisTiles, i: int, j: int,
                factor: int) -> None:
    """Fold one tile into the running weighted average held in `result` (see the module's docstring)."""
    y0, x0 = rows.starts[i] * factor, cols.starts[j] * factor
    height, width = min(tile.shape[0], result.shape[0] - y0), min(tile.shape[1], result.shape[1] - x0)
    wy = np.repeat(rows.weights[i], factor)[:height, None]
    wx = np.repeat(cols.weights[j], factor)[None, :width]
    earlier_y = np.repeat(rows.before[i], factor)[:height, None]
    upto_x = np.repeat(cols.before[j] + cols.weights[j], factor)[None, :width]
    mine = wy * wx
    # Rows above count in full (their columns' weights sum to 1); this row counts up to this tile.
    so_far = earlier_y + wy * upto_x
    share = np.divide(mine, so_far, out=np.zeros_like(mine), where=so_far > 0)[:, :, None]
    region = result[y0:y0 + height, x0:x0 + width]
    current = region.astype(np.float32)
    region[...] = np.clip(np.rint(current + share * (tile[:height, :width] - current)), 0, 255).astype(np.uint8)


def _chunks(jobs: Sequence[tuple[int, int]], size: int) -> Iterator[Sequence[tuple[int, int]]]:
    for start in range(0, len(jobs), size):
        yield jobs[start:start + size]

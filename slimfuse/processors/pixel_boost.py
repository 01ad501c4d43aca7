"""Pixel boost: run a model of size S on a crop of N x S pixels by splitting the crop into N^2 interleaved
sub-images (every N-th pixel, at each of the N x N offsets), running each, and re-interleaving the results.

Sub-image (a, b) holds crop[a::N, b::N], so re-interleaving is exact: explode(implode(crop)) == crop.
Cost grows with N^2; detail grows because each sub-image sees the face at the model's full size.
"""
from __future__ import annotations

import numpy as np

from slimfuse.models.neural.swappers import PIXEL_BOOSTS



def valid_boosts(model_size: int) -> list[int]:
    return [size for size in PIXEL_BOOSTS if size >= model_size and size % model_size == 0]


def boost_factor(model_size: int, pixel_boost: int | None) -> int:
    """N for a pixel boost size (None: the model's own size, N = 1); ValueError when it is not a multiple."""
    if pixel_boost is None:
        return 1
    if pixel_boost < model_size or pixel_boost % model_size:
        raise ValueError(f"pixel boost {pixel_boost} does not suit a {model_size} px model; "
                         f"choose one of {', '.join(map(str, valid_boosts(model_size)))}")
    return pixel_boost // model_size


def implode(crop: np.ndarray, factor: int) -> np.ndarray:
    """(N*S, N*S, ...) -> (N*N, S, S, ...): sub-image a*N + b is crop[a::N, b::N]."""
    height, width = crop.shape[:2]
    if height != width or height % factor:
        raise ValueError(f"a {height}x{width} crop does not split into {factor}x{factor} sub-images")
    size = height // factor
    rest = crop.shape[2:]
    tiles = crop.reshape(size, factor, size, factor, *rest)
    order = (1, 3, 0, 2, *range(4, 4 + len(rest)))
    return np.ascontiguousarray(tiles.transpose(order).reshape(factor * factor, size, size, *rest))


def explode(tiles: np.ndarray, factor: int) -> np.ndarray:
    """(N*N, S, S, ...) -> (N*S, N*S, ...), the inverse of `implode`."""
    count, size = tiles.shape[0], tiles.shape[1]
    if count != factor * factor:
        raise ValueError(f"{count} sub-images cannot form a {factor}x{factor} pixel boost")
    rest = tiles.shape[3:]
    grid = tiles.reshape(factor, factor, size, size, *rest)
    order = (2, 0, 3, 1, *range(4, 4 + len(rest)))
    return np.ascontiguousarray(grid.transpose(order).reshape(size * factor, size * factor, *rest))

"""Images to model tensors and back, and running a session over a batch where its batch axis allows.

Crops are RGB uint8 (N, H, W, 3); tensors are float32 NCHW, (x/255 - mean) / std. Image outputs map back
through the model's output range (y - low) / (high - low), clipped, to RGB uint8.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MAX_BATCH = 8
"""The most faces sent through a model in one run, to bound activation memory."""


def to_tensor(crops: Sequence[np.ndarray] | np.ndarray, mean: Sequence[float] = (0.0, 0.0, 0.0),
              std: Sequence[float] = (1.0, 1.0, 1.0)) -> np.ndarray:
    batch = np.asarray(crops if isinstance(crops, np.ndarray) else np.stack(list(crops)), dtype=np.float32)
    if batch.ndim == 3:
        batch = batch[None]
    scaled = batch / np.float32(255.0)
    scaled = (scaled - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)
    return np.ascontiguousarray(scaled.transpose(0, 3, 1, 2), dtype=np.float32)


def to_unit(output: np.ndarray, output_range: Sequence[float] = (0.0, 1.0)) -> np.ndarray:
    """NCHW model output -> NHWC float32 RGB in [0, 1]."""
    low, high = float(output_range[0]), float(output_range[1])
    unit = (np.asarray(output, dtype=np.float32) - np.float32(low)) / np.float32(high - low)
    return np.clip(unit, 0.0, 1.0).transpose(0, 2, 3, 1)


def to_images(output: np.ndarray, output_range: Sequence[float] = (0.0, 1.0)) -> np.ndarray:
    """NCHW model output -> NHWC RGB uint8."""
    return np.rint(to_unit(output, output_range) * np.float32(255.0)).astype(np.uint8)


def batch_axis_free(session: Any) -> bool:
    """True when every input of the session takes any size on its first axis."""
    return all(not (arg.shape and isinstance(arg.shape[0], int) and arg.shape[0] > 0) for arg in session.get_inputs())


def run_batched(session: Any, items: Mapping[str, np.ndarray], shared: Mapping[str, np.ndarray] | None = None,
                max_batch: int = MAX_BATCH) -> np.ndarray:
    """The first output of `session` for N items: `items` inputs have N on their first axis, `shared` inputs
    are the same for every item (given with a first axis of 1). One run per chunk of `max_batch` when the model's
    batch axis is free, else one run per item."""
    shared = dict(shared or {})
    count = len(next(iter(items.values())))
    step = max(1, max_batch) if batch_axis_free(session) else 1
    outputs = []
    for start in range(0, count, step):
        stop = min(start + step, count)
        feeds = {name: value[start:stop] for name, value in items.items()}
        for name, value in shared.items():
            feeds[name] = np.repeat(value, stop - start, axis=0) if stop - start > 1 else value
        outputs.append(session.run(None, feeds)[0])
    return np.concatenate(outputs, axis=0)

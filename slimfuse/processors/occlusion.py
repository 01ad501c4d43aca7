"""Occlusion masks from DeepFaceLab's XSeg models (xseg_1, xseg_2, xseg_3): where an aligned face crop shows
the face itself, not a hand, hair, a microphone or glasses' frames in front of it.

The model takes 256 px crops channels-last, BGR / 255 (DeepFaceLab trains on OpenCV's BGR images) and gives
1 on visible face. Its mask is scaled back to each crop's size and its edge softened (`mask_types.soft_edge`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import onnxruntime as ort

from slimfuse.models.neural.masks import OCCLUDER_SIZE
from slimfuse.models.tensors import MAX_BATCH, batch_axis_free
from slimfuse.processors.mask_types import EDGE_SIGMA, soft_edge


@dataclass(frozen=True)
class OccluderOptions:
    input_name: str = "input"
    size: int = OCCLUDER_SIZE
    batch_size: int = MAX_BATCH
    """Most crops per model call; one at a time for a model whose batch axis is fixed."""
    edge_sigma: float = EDGE_SIGMA


class Occluder:
    def __init__(self, session: ort.InferenceSession, options: OccluderOptions = OccluderOptions()) -> None:
        self.session = session
        self.options = options

    def masks(self, crops: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One float32 mask in [0, 1] of each RGB uint8 crop's size: 1 where the face is not covered."""
        raw = self.raw(crops)
        return [soft_edge(cv2.resize(mask, (crop.shape[1], crop.shape[0]), interpolation=cv2.INTER_LINEAR),
                          self.options.edge_sigma * max(crop.shape[:2]))
                for mask, crop in zip(raw, crops, strict=True)]

    def raw(self, crops: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The model's own masks (size x size, clipped to [0, 1]), in batches of `batch_size`."""
        size = self.options.size
        step = max(self.options.batch_size, 1) if batch_axis_free(self.session) else 1
        found: list[np.ndarray] = []
        for start in range(0, len(crops), step):
            batch = np.stack([_prepare(crop, size) for crop in crops[start:start + step]])
            output = self.session.run(None, {self.options.input_name: batch})[0]
            found.extend(np.clip(output.reshape(len(batch), size, size), 0.0, 1.0).astype(np.float32))
        return found


def _prepare(crop: np.ndarray, size: int) -> np.ndarray:
    shrink = max(crop.shape[:2]) > size
    resized = cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    return resized[:, :, ::-1].astype(np.float32) / 255.0

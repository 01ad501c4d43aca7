"""Region masks from BiSeNet face parsers (bisenet_resnet_18, bisenet_resnet_34): the chosen parts of an aligned
face crop (`--face-mask-regions`), e.g. skin and nose but not the eyes or mouth.

The model takes 512 px crops, RGB with ImageNet's mean and std, and gives logits for the 19 CelebAMask-HQ
classes; a pixel belongs to the region when its most likely class is one of the chosen ones. The mask is
scaled back to each crop's size and its edge softened (`mask_types.soft_edge`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import onnxruntime as ort

from slimfuse.models.neural.masks import IMAGENET_MEAN, IMAGENET_STD, PARSER_SIZE, REGIONS
from slimfuse.models.tensors import MAX_BATCH, batch_axis_free
from slimfuse.processors.mask_types import EDGE_SIGMA, soft_edge


@dataclass(frozen=True)
class ParserOptions:
    regions: tuple[str, ...]
    """The classes the mask keeps (the run's --face-mask-regions)."""
    input_name: str = "input"
    size: int = PARSER_SIZE
    batch_size: int = MAX_BATCH
    """Most crops per model call; one at a time for a model whose batch axis is fixed."""
    edge_sigma: float = EDGE_SIGMA

    def __post_init__(self) -> None:
        unknown = [name for name in self.regions if name not in REGIONS]
        if unknown:
            raise ValueError(f"unknown face mask region {', '.join(unknown)}; known: {', '.join(REGIONS)}")


class FaceParser:
    def __init__(self, session: ort.InferenceSession, options: ParserOptions) -> None:
        self.session = session
        self.options = options
        self._selected = np.array(sorted({REGIONS[name] for name in options.regions}), dtype=np.uint8)

    def masks(self, crops: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One float32 mask in [0, 1] of each RGB uint8 crop's size: 1 on the chosen regions."""
        found = []
        for classes, crop in zip(self.classes(crops), crops, strict=True):
            selected = np.isin(classes, self._selected).astype(np.float32)
            resized = cv2.resize(selected, (crop.shape[1], crop.shape[0]), interpolation=cv2.INTER_LINEAR)
            found.append(soft_edge(resized, self.options.edge_sigma * max(crop.shape[:2])))
        return found

    def classes(self, crops: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Each crop's most likely class per pixel (size x size uint8), in batches of `batch_size`."""
        size = self.options.size
        step = max(self.options.batch_size, 1) if batch_axis_free(self.session) else 1
        found: list[np.ndarray] = []
        for start in range(0, len(crops), step):
            batch = np.stack([parser_input(crop, size) for crop in crops[start:start + step]])
            logits = self.session.run(None, {self.options.input_name: batch})[0]
            found.extend(np.argmax(logits, axis=1).astype(np.uint8))
        return found


def parser_input(crop: np.ndarray, size: int) -> np.ndarray:
    """An RGB uint8 crop as the parser takes it: size x size, ImageNet-normalised, channels first."""
    shrink = max(crop.shape[:2]) > size
    resized = cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    normalised = (resized.astype(np.float32) / 255.0 - np.float32(IMAGENET_MEAN)) / np.float32(IMAGENET_STD)
    return normalised.transpose(2, 0, 1)

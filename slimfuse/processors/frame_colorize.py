"""The frame colouriser (`--processors frame_colorizer`): a colour version of each whole frame, as FaceFusion's.

The model sees a grey copy of the frame at --frame-colorizer-size (bilinear) and gives its colours at that size;
they are stretched back over the frame (bilinear) and joined to the frame's own lightness in LAB, then the result
is blended with the frame by --frame-colorizer-blend.
- ddcolor family: its input is the grey frame through float LAB with the colour zeroed (RGB in [0, 1]); its output
  is LAB a and b, joined to the frame's float L.
- deoldify family: its input is the grey frame as RGB 0..255; its output is an RGB picture whose 8-bit LAB a and b
  are joined to the frame's 8-bit L. (FaceFusion 3.8.1 joins them to the frame's blue channel instead, which is
  the lightness only of a grey frame and even there a few levels off: slimfuse keeps the frame's lightness.)
Besides the model's own input and output, the work is a few whole-frame LAB conversions: float32 copies of the
frame (12 bytes a pixel) at most, nothing that grows with the model.
"""
from __future__ import annotations

from functools import cache

import cv2
import numpy as np

from slimfuse.config import FrameColorizerOptions
from slimfuse.models.neural.frame_colorizers import COLORIZER_INPUT, TYPES, ColorizerType
from slimfuse.models.pool import ModelPool


class FrameColorizer:
    def __init__(self, pool: ModelPool, options: FrameColorizerOptions) -> None:
        model = options.frame_colorizer_model
        if pool.store.catalog.get(model).kind != "frame_colorizer":
            raise ValueError(f"{model} is not a frame colouriser")
        self.pool = pool
        self.model = model
        self.kind: ColorizerType = TYPES[model]
        self.side = options.side
        self.blend = options.frame_colorizer_blend
        self.models: tuple[str, ...] = (model,)
        self.frame_scale = 1

    def load(self) -> None:
        """Load (and check) the model before any frame."""
        self.pool.session(self.model)

    def process_frame(self, frame: np.ndarray, time: float = 0.0) -> np.ndarray:
        """The coloured RGB uint8 frame, blended with `frame` (RGB uint8; an RGBA frame keeps its alpha); `time` is
        not used."""
        if frame.shape[2] == 4:
            return np.dstack([self.process_frame(np.ascontiguousarray(frame[..., :3]), time), frame[..., 3:]])
        colours = self.colours(model_input(frame, self.kind, self.side))
        coloured = join_colours(frame, colours, self.kind)
        if self.blend == 100:
            return coloured
        share = self.blend / 100
        return cv2.addWeighted(frame, 1 - share, coloured, share, 0)

    def colours(self, tensor: np.ndarray) -> np.ndarray:
        """The model's output for its input tensor, as an S x S x C float32 picture."""
        output = self.pool.session(self.model).run(None, {COLORIZER_INPUT: tensor})[0]
        channels = 2 if self.kind == "ddcolor" else 3
        if output.shape != (1, channels, self.side, self.side):
            raise ValueError(f"{self.model} gave {output.shape} for {tensor.shape}: not a {self.kind} colouriser")
        return np.ascontiguousarray(output[0].transpose(1, 2, 0), dtype=np.float32)


def model_input(frame: np.ndarray, kind: ColorizerType, side: int) -> np.ndarray:
    """The [1, 3, side, side] float32 tensor the colouriser sees: the frame in grey, resized."""
    grey = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    picture = _neutral_grey()[grey] if kind == "ddcolor" else cv2.cvtColor(grey, cv2.COLOR_GRAY2RGB)
    resized = cv2.resize(picture, (side, side), interpolation=cv2.INTER_LINEAR)
    return np.ascontiguousarray(resized.transpose(2, 0, 1)[None], dtype=np.float32)


@cache
def _neutral_grey() -> np.ndarray:
    """Each grey level's RGB in [0, 1] after float LAB with the colour zeroed (256 x 3 float32): what the ddcolor
    family takes for a grey pixel."""
    levels = np.repeat((np.arange(256, dtype=np.float64) / 255.0).astype(np.float32)[:, None, None], 3, axis=2)
    lab = cv2.cvtColor(levels, cv2.COLOR_RGB2LAB)
    lab[..., 1:] = 0
    table = cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)[:, 0, :]
    table.setflags(write=False)
    return table


def join_colours(frame: np.ndarray, colours: np.ndarray, kind: ColorizerType) -> np.ndarray:
    """The frame's lightness with the model's colours (S x S x C, stretched over the frame), RGB uint8."""
    height, width = frame.shape[:2]
    stretched = cv2.resize(colours, (width, height), interpolation=cv2.INTER_LINEAR)
    if kind == "ddcolor":
        lightness = cv2.cvtColor((frame / 255.0).astype(np.float32), cv2.COLOR_RGB2LAB)[..., :1]
        joined = cv2.cvtColor(np.concatenate([lightness, stretched], axis=2), cv2.COLOR_LAB2RGB)
        return np.rint(joined * np.float32(255)).astype(np.uint8)
    picture = np.clip(stretched, 0, 255).astype(np.uint8)
    lab = cv2.cvtColor(picture, cv2.COLOR_RGB2LAB)
    lab[..., 0] = cv2.cvtColor(frame, cv2.COLOR_RGB2LAB)[..., 0]
    return cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)

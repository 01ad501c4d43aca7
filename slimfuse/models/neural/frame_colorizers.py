"""Catalog entries: the frame colourisers users bring (none ships in a registry package; see the README).

Facts (FaceFusion 3.8.1's frame_colorizer processor and model table, models-3.0.0; read, not copied): each takes
`input` [1, 3, S, S] with S the --frame-colorizer-size (192, 256, 384 or 512), a grey version of the frame resized
to S x S (bilinear), and gives its colours at S x S, resized back to the frame (bilinear):
- ddcolor, ddcolor_artistic (piddnad, Apache-2.0): the grey frame as RGB in [0, 1] (through LAB with its colour
  zeroed); the first output is [1, 2, S, S], the LAB a and b channels, joined to the frame's own L.
- deoldify, deoldify_artistic, deoldify_stable (jantic, MIT): the grey frame as RGB in 0..255; the first output is
  [1, 3, S, S], an RGB picture in 0..255 whose LAB a and b (8-bit LAB) are joined to the frame's lightness.
Output names are not confirmed from a public source; slimfuse reads the first output by position.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

ColorizerType = Literal["ddcolor", "deoldify"]
COLORIZER_INPUT = "input"
SIZES: tuple[int, ...] = (192, 256, 384, 512)
"""FaceFusion's --frame-colorizer-size choices (square)."""

_LICENCES = {"ddcolor": "Apache-2.0 (DDColor, piddnad)", "deoldify": "MIT (DeOldify, jantic)"}
_DESCRIPTIONS = {
    "ddcolor": "DDColor", "ddcolor_artistic": "DDColor, artistic weights", "deoldify": "DeOldify",
    "deoldify_artistic": "DeOldify, artistic weights", "deoldify_stable": "DeOldify, stable weights",
}


def _spec(name: str, kind: ColorizerType) -> ModelSpec:
    channels = 2 if kind == "ddcolor" else 3
    io = ModelIO(inputs=(TensorSpec(COLORIZER_INPUT, (1, 3, "height", "width")),),
                 outputs=(TensorSpec("output", (1, channels, "height", "width")),))
    return neural_spec(name, "frame_colorizer", _LICENCES[kind],
                       f"{_DESCRIPTIONS[name]}: colours a grey frame (--frame-colorizer-size px)", "models-3.0.0", io)


TYPES: Mapping[str, ColorizerType] = MappingProxyType({
    "ddcolor": "ddcolor", "ddcolor_artistic": "ddcolor", "deoldify": "deoldify", "deoldify_artistic": "deoldify",
    "deoldify_stable": "deoldify"})
"""Each model's family (FaceFusion's `type`): how its input is made and its output joined to the frame."""
MODELS: tuple[ModelSpec, ...] = tuple(_spec(name, kind) for name, kind in TYPES.items())
FRAME_COLORIZER_NAMES: tuple[str, ...] = tuple(TYPES)

"""Catalog entries: the whole-frame super-resolution models users bring (none ships in a registry package;
see the README).

Facts (FaceFusion 3.x's frame_enhancer processor; read, not copied): real_esrgan_x2 and real_esrgan_x4 take
`input` [1, 3, H, W] RGB / 255 and give [1, 3, H x scale, W x scale] in [0, 1]; FaceFusion feeds them 256 px
tiles, so slimfuse never relies on other input sizes (smaller frames are padded to a whole tile). The output
name is not confirmed from a public source; slimfuse reads the first output by position.
"""
from __future__ import annotations

from types import MappingProxyType

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

_REAL_ESRGAN = "BSD-3-Clause (Real-ESRGAN, xinntao)"


def _io(scale: int) -> ModelIO:
    return ModelIO(
        inputs=(TensorSpec("input", (1, 3, "height", "width")),),
        outputs=(TensorSpec("output", (1, 3, f"height_x{scale}", f"width_x{scale}")),),
    )


def _real_esrgan(scale: int) -> ModelSpec:
    return neural_spec(
        f"real_esrgan_x{scale}", "frame_enhancer", _REAL_ESRGAN,
        f"Real-ESRGAN x{scale} super-resolution for whole frames (run on tiles)", "models-3.0.0", _io(scale))


MODELS: tuple[ModelSpec, ...] = (_real_esrgan(2), _real_esrgan(4))

SCALES = MappingProxyType({"real_esrgan_x2": 2, "real_esrgan_x4": 4})
"""How many times larger each model's output is than its input, per side."""

FRAME_ENHANCER_NAMES: tuple[str, ...] = tuple(SCALES)

"""Catalog entries: the voice extractors users bring for the lip syncer (FaceFusion's `voice_extractor.py` models).

Facts (FaceFusion 3.8.1): each takes `input` [windows, 4, 3072, 256], the short-time spectrum of windows of the
sound (each stereo channel's real and imaginary parts, 3072 frequency bins, 256 columns; FaceFusion reads the
window's length from the last axis: (256 - 1) x 1024 samples), and gives the voice's spectrum in the same layout as
its first output. Output names are not confirmed from a public source: slimfuse reads the first output by position.
"""
from __future__ import annotations

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

VOICE_INPUT = "input"
VOICE_BINS = 3072
VOICE_COLUMNS = 256
SHAPE = ("batch", 4, VOICE_BINS, VOICE_COLUMNS)


def _spec(name: str, licence: str, description: str, release: str) -> ModelSpec:
    return neural_spec(name, "voice_extractor", licence, description, release,
                       ModelIO(inputs=(TensorSpec(VOICE_INPUT, SHAPE),), outputs=(TensorSpec("output", SHAPE),)))


MODELS: tuple[ModelSpec, ...] = (
    _spec("kim_vocal_1", "non-commercial (Kim Vocal, KimberleyJensen)", "Kim Vocal 1 voice separation (MDX-Net)",
          "models-3.4.0"),
    _spec("kim_vocal_2", "non-commercial (Kim Vocal, KimberleyJensen)",
          "Kim Vocal 2 voice separation (MDX-Net; FaceFusion's default)", "models-3.0.0"),
    _spec("uvr_mdxnet", "MIT (UVR MDX-Net, Anjok07)", "UVR MDX-Net voice separation", "models-3.4.0"),
)
VOICE_EXTRACTOR_NAMES: tuple[str, ...] = tuple(spec.name for spec in MODELS)

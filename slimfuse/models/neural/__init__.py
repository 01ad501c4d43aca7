"""The neural models users bring, one module per kind."""
from __future__ import annotations

from slimfuse.models.neural import (classifiers, deep_swappers, detectors, enhancers, frame_enhancers, live_portrait,
                                    masks, recognizers, swappers)
from slimfuse.models.spec import ModelSpec

NEURAL_MODELS: tuple[ModelSpec, ...] = (
    swappers.MODELS + enhancers.MODELS + recognizers.MODELS + detectors.MODELS + masks.MODELS + frame_enhancers.MODELS
    + classifiers.MODELS + deep_swappers.MODELS + live_portrait.MODELS
)

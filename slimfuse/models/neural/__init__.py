"""The neural models users bring, one module per kind."""
from __future__ import annotations

from slimfuse.models.neural import (age_modifiers, background_removers, classifiers, deep_swappers, detectors,
                                    enhancers, frame_colorizers, frame_enhancers, lip_syncers, live_portrait,
                                    masks, recognizers, swappers, voice_extractors)
from slimfuse.models.spec import ModelSpec

NEURAL_MODELS: tuple[ModelSpec, ...] = (
    swappers.MODELS + enhancers.MODELS + recognizers.MODELS + detectors.MODELS + masks.MODELS + frame_enhancers.MODELS
    + classifiers.MODELS + deep_swappers.MODELS + age_modifiers.MODELS + frame_colorizers.MODELS
    + live_portrait.MODELS + lip_syncers.MODELS + voice_extractors.MODELS + background_removers.MODELS
)

"""Processors built for tests the way a run builds them, with the run's defaults (config.py) unless a test says
otherwise: the box mask alone (the neural processors' paste-back without a mesh), the default batcher."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from slimfuse.config import EnhanceOptions, LipSyncOptions, MaskOptions, SwapOptions
from slimfuse.media.voice import Voice
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.pool import ModelPool
from slimfuse.processors.enhance import EnhanceProcessor
from slimfuse.processors.lip_sync import LipSyncProcessor
from slimfuse.processors.onnx_swap import OnnxSwapProcessor
from slimfuse.processors.paste_masks import FaceMasker


def box_masker(pool: ModelPool) -> FaceMasker:
    return FaceMasker(pool, MaskOptions(face_mask_types=("box",)), None)


def make_swapper(pool: ModelPool, model: str, pixel_boost: int | None = None, masker: FaceMasker | None = None,
                 batcher: AdaptiveBatcher | None = None) -> OnnxSwapProcessor:
    return OnnxSwapProcessor(pool, SwapOptions(face_swapper_model=model), pixel_boost, masker or box_masker(pool),
                             batcher or AdaptiveBatcher(pool))


def make_enhancer(pool: ModelPool, model: str, blend: int | None = None, weight: float | None = None,
                  masker: FaceMasker | None = None) -> EnhanceProcessor:
    options = EnhanceOptions(face_enhancer_model=model)
    if blend is not None:
        options = replace(options, face_enhancer_blend=blend)
    if weight is not None:
        options = replace(options, face_enhancer_weight=weight)
    return EnhanceProcessor(pool, options, masker or box_masker(pool), AdaptiveBatcher(pool))


def make_lip_syncer(pool: ModelPool, model: str, voice: Voice, weight: float = 0.5,
                    masks: MaskOptions = MaskOptions(face_mask_types=("box",))) -> LipSyncProcessor:
    return LipSyncProcessor(pool, LipSyncOptions(lip_syncer_model=model, lip_syncer_weight=weight), masks, voice,
                            Path("voice.wav"), AdaptiveBatcher(pool))

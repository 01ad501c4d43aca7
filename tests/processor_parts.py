"""Processors built for tests the way a run builds them, with the run's defaults (config.py) unless a test says
otherwise: the box mask alone (the neural processors' paste-back without a mesh), the default batcher."""
from __future__ import annotations

from slimfuse.config import RunConfig
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.pool import ModelPool
from slimfuse.processors.enhance import EnhanceProcessor
from slimfuse.processors.mask_types import MaskOptions
from slimfuse.processors.onnx_swap import OnnxSwapProcessor
from slimfuse.processors.paste_masks import FaceMasker

DEFAULTS = RunConfig()


def box_masker(pool: ModelPool) -> FaceMasker:
    masks = DEFAULTS.masks
    return FaceMasker(pool, MaskOptions(types=("box",), blur=masks.face_mask_blur), None, masks.face_occluder_model,
                      masks.face_parser_model, masks.face_mask_regions)


def make_swapper(pool: ModelPool, model: str, pixel_boost: int | None = None, masker: FaceMasker | None = None,
            batcher: AdaptiveBatcher | None = None) -> OnnxSwapProcessor:
    return OnnxSwapProcessor(pool, model, pixel_boost, masker or box_masker(pool), batcher or AdaptiveBatcher(pool))


def make_enhancer(pool: ModelPool, model: str, blend: int | None = None, weight: float | None = None,
             masker: FaceMasker | None = None) -> EnhanceProcessor:
    enhance = DEFAULTS.enhance
    return EnhanceProcessor(pool, model, enhance.face_enhancer_blend if blend is None else blend,
                            enhance.face_enhancer_weight if weight is None else weight, masker or box_masker(pool),
                            AdaptiveBatcher(pool))

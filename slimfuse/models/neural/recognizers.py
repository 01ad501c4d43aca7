"""Catalog entries: face recognizers users bring (none ships in a registry package; see the README).

ArcFace (insightface's buffalo_l w600k_r50, as FaceFusion publishes it): `input` [1, 3, 112, 112], the face
aligned to arcface_112_v2, RGB (x - 127.5) / 127.5; the first output is the 512-d embedding, L2-normalised for use.
"""
from __future__ import annotations

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

ARCFACE = "arcface_w600k_r50"

MODELS: tuple[ModelSpec, ...] = (
    neural_spec(
        ARCFACE, "recognizer", "non-commercial research only (InsightFace)",
        "ArcFace ResNet-50 (WebFace600K) 512-d identity embedding, 112 px; the swappers' source identity",
        "models-3.0.0",
        ModelIO(
            inputs=(TensorSpec("input", (1, 3, 112, 112)),),
            outputs=(TensorSpec("output", (1, 512)),),
            template="arcface_112_v2",
            crop_size=112,
            mean=(0.5, 0.5, 0.5),
            std=(0.5, 0.5, 0.5),
        ),
    ),
)

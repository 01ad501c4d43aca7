"""Catalog entries: the face classifier users bring for selection by gender, race and age (none ships in a registry
package; see the README).

FairFace (dchen236, CC-BY-4.0, as FaceFusion publishes it, models-3.0.0): `input` [1, 3, 224, 224], the face aligned
to arcface_112_v2 at 224 px, RGB (x/255 - ImageNet mean) / ImageNet std; three int64 outputs, by position: the race,
gender and age class indices (the arg-max is inside the graph). Output names are not confirmed from a public source;
slimfuse reads them by position and checks the input only.
"""
from __future__ import annotations

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.neural.swappers import IMAGENET_MEAN, IMAGENET_STD
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

FAIRFACE = "fairface"

MODELS: tuple[ModelSpec, ...] = (
    neural_spec(
        FAIRFACE, "classifier", "CC-BY-4.0 (FairFace, dchen236)",
        "FairFace: the gender, race and age group of a face, 224 px; selection by --face-selector-gender, "
        "--face-selector-race and --face-selector-age-start/-end",
        "models-3.0.0",
        ModelIO(
            inputs=(TensorSpec("input", (1, 3, 224, 224)),),
            outputs=(TensorSpec("race_id", (1,), "int64"), TensorSpec("gender_id", (1,), "int64"),
                     TensorSpec("age_id", (1,), "int64")),
            template="arcface_112_v2",
            crop_size=224,
            mean=IMAGENET_MEAN,
            std=IMAGENET_STD,
        ),
    ),
)

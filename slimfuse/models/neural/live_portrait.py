"""Catalog entries: the live_portrait model set (KwaiVGI's LivePortrait as FaceFusion exports it), which the
expression restorer and the face editor run. Users bring the files (FaceFusion's release models-3.0.0).

Facts (FaceFusion 3.8.1's expression_restorer and face_editor processors; read, not copied):
- the feature extractor takes `input` [1, 3, 256, 256] (RGB / 255: the 512 px crop scaled to half with area
  interpolation) and gives the appearance feature volume [1, 32, 16, 64, 64];
- the motion extractor takes the same `input` and gives, by position: pitch, yaw, roll (degrees, one number each),
  scale, translation [1, 3], expression [1, 21, 3] and the canonical motion points [1, 21, 3];
- the generator takes `feature_volume`, `source` (the motion points wanted) and `target` (the points of the crop
  the volume came from), both [1, 21, 3], and gives the face [1, 3, 512, 512] in [0, 1];
- the stitcher takes `source` and `target` [1, 21, 3] and gives the stitched source points [1, 21, 3];
- the eye retargeter takes `input` [1, 66] (the 63 motion point values, both eyes' open ratios, the ratio wanted)
  and the lip retargeter `input` [1, 65] (63 values, the lips' open ratio, the ratio wanted); each gives the points'
  change [1, 63].
The outputs' names are not confirmed from a public source: slimfuse reads them by position, as FaceFusion does.
Sizes (about): feature extractor 4 MB, motion extractor 108 MB, generator 213 MB, the three small ones 1 MB each.
"""
from __future__ import annotations

from types import MappingProxyType

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

LICENCE = "MIT (LivePortrait, KwaiVGI)"
RELEASE = "models-3.0.0"
KIND = "live_portrait"
INPUT_SIZE = 256
"""The side of the extractors' input: half the 512 px crop."""
CROP_SIZE = 512
"""The side of the crop and of the generator's output."""
POINTS = 21
"""LivePortrait's implicit keypoints."""
VOLUME = (1, 32, 16, 64, 64)

FEATURE_EXTRACTOR = "live_portrait_feature_extractor"
MOTION_EXTRACTOR = "live_portrait_motion_extractor"
GENERATOR = "live_portrait_generator"
STITCHER = "live_portrait_stitcher"
EYE_RETARGETER = "live_portrait_eye_retargeter"
LIP_RETARGETER = "live_portrait_lip_retargeter"

IMAGE_INPUT = "input"
VOLUME_INPUT = "feature_volume"
SOURCE_INPUT = "source"
TARGET_INPUT = "target"
RETARGET_INPUT = "input"
EYE_WIDTH = 3 * POINTS + 3
LIP_WIDTH = 3 * POINTS + 2

_IMAGE = TensorSpec(IMAGE_INPUT, (1, 3, INPUT_SIZE, INPUT_SIZE))
_POINTS = (1, POINTS, 3)


def _spec(name: str, description: str, inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...]) -> ModelSpec:
    return neural_spec(name, KIND, LICENCE, description, RELEASE, ModelIO(inputs=inputs, outputs=outputs))


MODELS: tuple[ModelSpec, ...] = (
    _spec(FEATURE_EXTRACTOR, "LivePortrait appearance feature extractor (256 px face -> 3-D feature volume)",
          (_IMAGE,), (TensorSpec("feature_volume", VOLUME),)),
    _spec(MOTION_EXTRACTOR, "LivePortrait motion extractor (256 px face -> head pose, expression, keypoints)",
          (_IMAGE,), (TensorSpec("pitch", ()), TensorSpec("yaw", ()), TensorSpec("roll", ()),
                      TensorSpec("scale", (1, 1)), TensorSpec("translation", (1, 3)),
                      TensorSpec("expression", _POINTS), TensorSpec("motion_points", _POINTS))),
    _spec(GENERATOR, "LivePortrait warping and SPADE generator (feature volume and keypoints -> 512 px face)",
          (TensorSpec(VOLUME_INPUT, VOLUME), TensorSpec(SOURCE_INPUT, _POINTS), TensorSpec(TARGET_INPUT, _POINTS)),
          (TensorSpec("output", (1, 3, CROP_SIZE, CROP_SIZE)),)),
    _spec(STITCHER, "LivePortrait stitching (keeps the edited keypoints joined to the face around them)",
          (TensorSpec(SOURCE_INPUT, _POINTS), TensorSpec(TARGET_INPUT, _POINTS)), (TensorSpec("output", _POINTS),)),
    _spec(EYE_RETARGETER, "LivePortrait eye retargeting (opens or closes the eyes)",
          (TensorSpec(RETARGET_INPUT, (1, EYE_WIDTH)),), (TensorSpec("output", (1, 3 * POINTS)),)),
    _spec(LIP_RETARGETER, "LivePortrait lip retargeting (opens or closes the lips)",
          (TensorSpec(RETARGET_INPUT, (1, LIP_WIDTH)),), (TensorSpec("output", (1, 3 * POINTS)),)),
)

RESTORER_MODELS = MappingProxyType({"live_portrait": (FEATURE_EXTRACTOR, MOTION_EXTRACTOR, GENERATOR)})
"""The files each --expression-restorer-model choice runs, as FaceFusion lists them."""
EDITOR_MODELS = MappingProxyType({
    "live_portrait": (FEATURE_EXTRACTOR, MOTION_EXTRACTOR, EYE_RETARGETER, LIP_RETARGETER, STITCHER, GENERATOR),
})
"""The files each --face-editor-model choice runs, as FaceFusion lists them."""

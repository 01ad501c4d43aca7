"""Catalog entries: the face mask models users bring, occluders and face parsers (none ships in a registry
package; see the README).

Facts (FaceFusion 3.x's face_masker.py, yakhyo/face-parsing's export script and labels; read, not copied):
- xseg_1, xseg_2, xseg_3 (DeepFaceLab XSeg occluders): input `input` [N, 256, 256, 3] channels-last, BGR / 255;
  output [N, 256, 256, 1], 1 where the face is visible (not covered by hands, hair, objects).
- bisenet_resnet_18, bisenet_resnet_34 (BiSeNet face parsers trained on CelebAMask-HQ): input `input`
  [N, 3, 512, 512] RGB, ImageNet mean and std; output `output` [N, 19, 512, 512] class logits (classes in REGIONS).
The XSeg output name is not confirmed from a public source; slimfuse reads the first output by position.
"""
from __future__ import annotations

from types import MappingProxyType

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

OCCLUDER_SIZE = 256
PARSER_SIZE = 512
PARSER_CLASSES = 19
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

_XSEG = "GPL-3.0 (DeepFaceLab XSeg)"
_BISENET = "MIT (face-parsing, yakhyo)"


def _occluder_io() -> ModelIO:
    # Channels-last and BGR: the mean/std say /255, the order is the occluder's business.
    return ModelIO(
        inputs=(TensorSpec("input", ("batch", OCCLUDER_SIZE, OCCLUDER_SIZE, 3)),),
        outputs=(TensorSpec("output", ("batch", OCCLUDER_SIZE, OCCLUDER_SIZE, 1)),),
        crop_size=OCCLUDER_SIZE,
    )


def _parser_io() -> ModelIO:
    return ModelIO(
        inputs=(TensorSpec("input", ("batch", 3, PARSER_SIZE, PARSER_SIZE)),),
        outputs=(TensorSpec("output", ("batch", PARSER_CLASSES, PARSER_SIZE, PARSER_SIZE)),),
        crop_size=PARSER_SIZE,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
    )


def _xseg(version: int, release: str) -> ModelSpec:
    return neural_spec(
        f"xseg_{version}", "occluder", _XSEG,
        f"XSeg occluder {version}: where a 256 px face crop is not covered by hands, hair or objects", release,
        _occluder_io())


def _bisenet(depth: int, release: str) -> ModelSpec:
    return neural_spec(
        f"bisenet_resnet_{depth}", "parser", _BISENET,
        f"BiSeNet face parser (ResNet-{depth}): skin, brows, eyes, glasses, ears, nose, mouth, lips, neck, hair "
        "in a 512 px face crop", release, _parser_io())


MODELS: tuple[ModelSpec, ...] = (
    _xseg(1, "models-3.1.0"),
    _xseg(2, "models-3.1.0"),
    _xseg(3, "models-3.2.0"),
    _bisenet(18, "models-3.1.0"),
    _bisenet(34, "models-3.0.0"),
)

OCCLUDER_NAMES: tuple[str, ...] = ("xseg_1", "xseg_2", "xseg_3")
PARSER_NAMES: tuple[str, ...] = ("bisenet_resnet_18", "bisenet_resnet_34")
REGIONS = MappingProxyType({
    "skin": 1,
    "left-eyebrow": 2,
    "right-eyebrow": 3,
    "left-eye": 4,
    "right-eye": 5,
    "glasses": 6,
    "left-ear": 7,
    "right-ear": 8,
    "earring": 9,
    "nose": 10,
    "mouth": 11,
    "upper-lip": 12,
    "lower-lip": 13,
    "neck": 14,
    "necklace": 15,
    "cloth": 16,
    "hair": 17,
    "hat": 18,
})
"""The face parsers' classes (CelebAMask-HQ labels, background 0) by the names `--face-mask-regions` takes."""

"""Catalog entries: the background removers users bring (FaceFusion's list; none ships in a registry package). The
offline default is the embedded `selfie_segmentation` (slimfuse.models.catalog).

Facts (FaceFusion 3.8.1's background_remover processor; read, not copied): every model takes the whole frame
resized (not letterboxed) to its square size as `input` [1, C, S, S], RGB (x/255 - mean) / std; C is 3, and 4 for
corridor_key, whose fourth channel is a coarse key of the frame (1 - clip(2 (G - max(R, B)), 0, 1), resized to S).
FaceFusion reads outputs by position: the first is the foreground's alpha [1, 1, S, S], used clipped to 0..1
(u2net_cloth gives class scores [1, 4, S, S] instead: a pixel is foreground where the background class 0 does not
win); corridor_key also gives the unmixed foreground colours [1, 3, S, S] in 0..1 as its second output. The alpha
is resized back to the frame's size (bilinear). Output names are not confirmed from a public source.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
ZERO, ONE, HALF = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.5, 0.5, 0.5)
CLOTH_CLASSES = 4
"""u2net_cloth's classes: background, upper body, lower body, full body."""


@dataclass(frozen=True)
class Remover:
    """One of FaceFusion's background removers: what its catalog entry is made of."""

    name: str
    family: str
    """FaceFusion's `type`: how the output is read (u2net_cloth: class scores; corridor_key: a key channel in and
    a foreground out)."""
    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    licence: str
    release: str = "models-3.5.0"


REMOVERS: tuple[Remover, ...] = (
    Remover("ben_2", "ben", 1024, ZERO, ONE, "MIT (BEN2, PramaLLC)"),
    Remover("birefnet_general", "birefnet", 1024, ZERO, ONE, "MIT (BiRefNet, ZhengPeng7)"),
    Remover("birefnet_portrait", "birefnet", 1024, ZERO, ONE, "MIT (BiRefNet, ZhengPeng7)"),
    Remover("corridor_key_1024", "corridor_key", 1024, IMAGENET_MEAN, IMAGENET_STD,
            "non-commercial (CorridorKey, nikopueringer)", "models-3.6.0"),
    Remover("corridor_key_2048", "corridor_key", 2048, IMAGENET_MEAN, IMAGENET_STD,
            "non-commercial (CorridorKey, nikopueringer)", "models-3.6.0"),
    Remover("isnet_general", "isnet", 1024, HALF, ONE, "Apache-2.0 (IS-Net, xuebinqin)"),
    Remover("modnet", "modnet", 512, HALF, HALF, "Apache-2.0 (MODNet, ZHKKKe)"),
    Remover("ormbg", "ormbg", 1024, ZERO, ONE, "Apache-2.0 (ormbg, schirrmacher)"),
    Remover("rmbg_1.4", "rmbg", 1024, HALF, ONE, "non-commercial (RMBG-1.4, Bria)"),
    Remover("rmbg_2.0", "rmbg", 1024, IMAGENET_MEAN, IMAGENET_STD, "non-commercial (RMBG-2.0, Bria)"),
    Remover("silueta", "silueta", 320, IMAGENET_MEAN, IMAGENET_STD, "Apache-2.0 (silueta, Kikedao)"),
    Remover("u2net_cloth", "u2net_cloth", 768, IMAGENET_MEAN, IMAGENET_STD, "MIT (u2net cloth, levindabhi)"),
    Remover("u2net_general", "u2net", 320, IMAGENET_MEAN, IMAGENET_STD, "Apache-2.0 (U^2-Net, xuebinqin)"),
    Remover("u2net_human", "u2net", 320, IMAGENET_MEAN, IMAGENET_STD, "Apache-2.0 (U^2-Net, xuebinqin)"),
    Remover("u2netp", "u2netp", 320, IMAGENET_MEAN, IMAGENET_STD, "Apache-2.0 (U^2-Net, xuebinqin)"),
)


def _io(remover: Remover) -> ModelIO:
    size = remover.size
    channels = 4 if remover.family == "corridor_key" else 3
    classes = CLOTH_CLASSES if remover.family == "u2net_cloth" else 1
    outputs = (TensorSpec("alpha", (1, classes, size, size)),)
    if remover.family == "corridor_key":
        outputs += (TensorSpec("foreground", (1, 3, size, size)),)
    return ModelIO(inputs=(TensorSpec("input", (1, channels, size, size)),), outputs=outputs, crop_size=size,
                   mean=remover.mean, std=remover.std)


def _spec(remover: Remover) -> ModelSpec:
    return neural_spec(remover.name, "background_remover", remover.licence,
                       f"{remover.family} background remover, {remover.size} px (FaceFusion's {remover.name})",
                       remover.release, _io(remover))


MODELS: tuple[ModelSpec, ...] = tuple(_spec(remover) for remover in REMOVERS)

BY_NAME = MappingProxyType({remover.name: remover for remover in REMOVERS})
BACKGROUND_REMOVER_NAMES: tuple[str, ...] = tuple(BY_NAME)

"""Catalog entries: the lip syncers users bring (FaceFusion's lip_syncer models, none ships in a registry package).

Facts (FaceFusion 3.8.1's `facefusion/processors/modules/lip_syncer/core.py`): every model takes `source`
[1, 1, 80, 16], a window of 16 columns (0.2 s) of the sound's 80-band log-mel spectrogram (slimfuse.media.voice),
and gives the face back as its first output in [0, 1].
- wav2lip (96 px): `target` [1, 6, 96, 96], the lower face cut from the ffhq_512 crop along the box of its 68
  points, BGR / 255, twice: first with its lower half blacked out, then whole. Its output is BGR. The mel window is
  scaled by 2 x --lip-syncer-weight (1 at the default 0.5).
- edtalk (256 px): `target` [1, 3, 256, 256], the whole ffhq_512 crop shrunk to 256 px, RGB / 255, and `weight`
  [1] float32, --lip-syncer-weight itself. Its output is RGB.
Output names are not confirmed from a public source: slimfuse reads the first output by position.
"""
from __future__ import annotations

from types import MappingProxyType

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

MEL_INPUT = "source"
FACE_INPUT = "target"
WEIGHT_INPUT = "weight"
MEL_SHAPE = (1, 1, 80, 16)
FACE_TEMPLATE = "ffhq_512"
FACE_CROP = 512
"""Both kinds start from the face aligned to ffhq_512 at 512 px, the crop that is pasted back."""
WAV2LIP, EDTALK = "wav2lip", "edtalk"


def _wav2lip_io() -> ModelIO:
    return ModelIO(inputs=(TensorSpec(MEL_INPUT, MEL_SHAPE), TensorSpec(FACE_INPUT, (1, 6, 96, 96))),
                   outputs=(TensorSpec("output", (1, 3, 96, 96)),), template=FACE_TEMPLATE, crop_size=96)


def _edtalk_io() -> ModelIO:
    return ModelIO(inputs=(TensorSpec(MEL_INPUT, MEL_SHAPE), TensorSpec(FACE_INPUT, (1, 3, 256, 256)),
                           TensorSpec(WEIGHT_INPUT, (1,))),
                   outputs=(TensorSpec("output", (1, 3, 256, 256)),), template=FACE_TEMPLATE, crop_size=256)


MODELS: tuple[ModelSpec, ...] = (
    neural_spec("wav2lip_96", "lip_syncer", "non-commercial (Wav2Lip, Rudrabha)",
                "Wav2Lip lip sync, the lower face at 96 px", "models-3.0.0", _wav2lip_io()),
    neural_spec("wav2lip_gan_96", "lip_syncer", "non-commercial (Wav2Lip, Rudrabha)",
                "Wav2Lip GAN lip sync, the lower face at 96 px (FaceFusion's default)", "models-3.0.0", _wav2lip_io()),
    neural_spec("edtalk_256", "lip_syncer", "Apache-2.0 (EDTalk, tanshuai0219)",
                "EDTalk lip sync, the whole face at 256 px, with a weight input (--lip-syncer-weight)",
                "models-3.3.0", _edtalk_io()),
)

LIP_SYNCER_NAMES: tuple[str, ...] = tuple(spec.name for spec in MODELS)
LIP_SYNCER_TYPES = MappingProxyType({"wav2lip_96": WAV2LIP, "wav2lip_gan_96": WAV2LIP, "edtalk_256": EDTALK})
"""Each model's kind of input, FaceFusion's `type`."""

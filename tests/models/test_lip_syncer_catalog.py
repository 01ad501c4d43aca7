"""The lip syncers' and voice extractors' catalog entries against FaceFusion 3.8.1's facts (its model tables and the
tensors it feeds, written down independently in tests/parity/standins.py), and a file of another contract
refused."""
from __future__ import annotations

from pathlib import Path

import pytest

import neural_models as nm
from parity import standins
from slimfuse.errors import ModelInvalidError
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.lip_syncers import FACE_CROP, FACE_TEMPLATE, LIP_SYNCER_NAMES, LIP_SYNCER_TYPES
from slimfuse.models.neural.voice_extractors import VOICE_EXTRACTOR_NAMES
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store

# name: (FaceFusion's release, type, model size, licence word)
FACTS = {
    "wav2lip_96": ("models-3.0.0", "wav2lip", 96, "non-commercial"),
    "wav2lip_gan_96": ("models-3.0.0", "wav2lip", 96, "non-commercial"),
    "edtalk_256": ("models-3.3.0", "edtalk", 256, "Apache-2.0"),
}
VOICE_FACTS = {"kim_vocal_1": ("models-3.4.0", "non-commercial"), "kim_vocal_2": ("models-3.0.0", "non-commercial"),
               "uvr_mdxnet": ("models-3.4.0", "MIT")}


def test_every_lip_syncer_of_facefusion_is_there() -> None:
    assert sorted(LIP_SYNCER_NAMES) == sorted(FACTS) == sorted(contract.name for contract in standins.LIP_SYNCERS)


@pytest.mark.parametrize("name", sorted(FACTS))
def test_entries_follow_facefusions_facts(name: str) -> None:
    release, kind, size, licence = FACTS[name]
    spec = Catalog().get(name)
    assert spec.kind == "lip_syncer" and LIP_SYNCER_TYPES[name] == kind and licence in spec.licence
    assert spec.urls == (f"https://github.com/facefusion/facefusion-assets/releases/download/{release}/{name}.onnx",
                         f"https://huggingface.co/facefusion/{release}/resolve/main/{name}.onnx")
    assert spec.sha256 is None and spec.publisher_crc32  # trust on first use, a download checked by NAME.hash
    assert spec.io is not None and spec.io.crop_size == size
    assert (FACE_TEMPLATE, FACE_CROP) == ("ffhq_512", 512)
    contract = standins.CONTRACTS[name]
    assert [(t.name, t.shape) for t in spec.io.inputs] == [(t.name, t.shape) for t in contract.inputs]
    assert [t.shape for t in spec.io.outputs] == [t.shape for t in contract.outputs]


@pytest.mark.parametrize("name", sorted(VOICE_FACTS))
def test_voice_extractors_follow_facefusions_facts(name: str) -> None:
    release, licence = VOICE_FACTS[name]
    spec = Catalog().get(name)
    assert spec.kind == "voice_extractor" and licence in spec.licence and name in VOICE_EXTRACTOR_NAMES
    assert spec.urls[0] == f"https://github.com/facefusion/facefusion-assets/releases/download/{release}/{name}.onnx"
    assert spec.io is not None
    contract = standins.CONTRACTS[name]
    assert [(t.name, t.shape) for t in spec.io.inputs] == [(t.name, t.shape) for t in contract.inputs]
    assert [t.shape for t in spec.io.outputs] == [t.shape for t in contract.outputs]


def test_a_file_of_another_contract_is_refused(tmp_path: Path, store: Store) -> None:
    standins.write("edtalk_256", tmp_path / "built")
    (tmp_path / "placed").mkdir()
    (tmp_path / "built" / "edtalk_256.onnx").rename(tmp_path / "placed" / "wav2lip_96.onnx")
    pool = ModelPool(nm.isolated_store(tmp_path / "home", store, tmp_path / "placed"))
    with pytest.raises(ModelInvalidError, match="expected inputs source"):
        pool.session("wav2lip_96")

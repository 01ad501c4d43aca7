"""The live_portrait catalog entries: FaceFusion 3.8.1's files (models-3.0.0, its GitHub release then the Hugging
Face mirror, its NAME.hash beside each), MIT, trust on first use; their inputs are the parity stand-ins' (FaceFusion's
contracts, written down independently), and each processor's set is FaceFusion's list."""
from __future__ import annotations

from parity import standins
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural import live_portrait as lp

NAMES = ("live_portrait_feature_extractor", "live_portrait_motion_extractor", "live_portrait_generator",
         "live_portrait_stitcher", "live_portrait_eye_retargeter", "live_portrait_lip_retargeter")


def test_the_entries_are_facefusions_files() -> None:
    catalog = Catalog()
    for name in NAMES:
        spec = catalog.get(name)
        assert spec.kind == "live_portrait" and spec.licence.startswith("MIT")
        assert spec.urls == (
            f"https://github.com/facefusion/facefusion-assets/releases/download/models-3.0.0/{name}.onnx",
            f"https://huggingface.co/facefusion/models-3.0.0/resolve/main/{name}.onnx")
        assert spec.sha256 is None and spec.publisher_crc32 and spec.filename == f"{name}.onnx"


def test_the_tensors_are_the_stand_ins() -> None:
    catalog = Catalog()
    for name in NAMES:
        io = catalog.get(name).io
        contract = standins.CONTRACTS[name]
        assert io is not None
        assert [(tensor.name, tensor.shape) for tensor in io.inputs] == [
            (tensor.name, tensor.shape) for tensor in contract.inputs]
        assert [tensor.shape for tensor in io.outputs] == [tensor.shape for tensor in contract.outputs]


def test_each_processor_runs_facefusions_set() -> None:
    assert lp.RESTORER_MODELS["live_portrait"] == NAMES[:3]
    assert set(lp.EDITOR_MODELS["live_portrait"]) == set(NAMES)

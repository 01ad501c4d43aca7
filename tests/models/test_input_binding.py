"""Models users already have: a single-input model whose tensor names differ from the catalog's is bound by
position when its shape and type match (insightface's own w600k_r50.onnx: `input.1` -> `683`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import neural_models as nm
from slimfuse.errors import ModelInvalidError
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.recognize import ArcFaceRecognizer
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.models.validate import check_file

ARCFACE = "arcface_w600k_r50"


def renamed(model: onnx.ModelProto, names: dict[str, str]) -> onnx.ModelProto:
    """The same graph with its tensors `names` renamed (inputs, outputs and every node that reads or writes them)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    for value in [*graph.input, *graph.output]:
        value.name = names.get(value.name, value.name)
    for node in graph.node:
        node.input[:] = [names.get(name, name) for name in node.input]
        node.output[:] = [names.get(name, name) for name in node.output]
    onnx.checker.check_model(model)
    return model


def _pool(root: Path, store: Store, model: onnx.ModelProto) -> tuple[ModelPool, Path]:
    placed = root / "placed"
    path = nm.save(model, placed, ARCFACE)
    return ModelPool(nm.isolated_store(root / "home", store, placed)), path


def test_insightface_named_recognizer_is_bound_by_position(tmp_path: Path, store: Store, astronaut: np.ndarray,
                                                           grace_hopper: np.ndarray) -> None:
    insightface = renamed(nm.recognizer(), {"input": "input.1", "output": "683"})
    assert [value.name for value in insightface.graph.input] == ["input.1"]
    theirs, path = _pool(tmp_path / "insightface", store, insightface)
    ours, _ = _pool(tmp_path / "facefusion", store, nm.recognizer())
    assert check_file(store.catalog.get(ARCFACE), path) is None
    crops = []
    for image in (astronaut, grace_hopper):
        face = FaceAnalyser(ours).faces(image)[0]
        crops.append(ArcFaceRecognizer(ours).crop(image, face))
    np.testing.assert_allclose(ArcFaceRecognizer(theirs).raw_embeddings(crops),
                               ArcFaceRecognizer(ours).raw_embeddings(crops), rtol=1e-6, atol=1e-6)
    assert path.is_file() and not list(path.parent.glob("*.rejected-*"))


def test_a_single_input_of_another_shape_is_still_rejected(tmp_path: Path, store: Store) -> None:
    wrong = renamed(nm.recognizer(name="arcface_w600k_r50"), {"input": "input.1"})
    wrong.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2  # a batch of 2, where the catalog says 1
    wrong.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 2
    pool, path = _pool(tmp_path, store, wrong)
    assert check_file(store.catalog.get(ARCFACE), path) is not None
    with pytest.raises(ModelInvalidError, match=r"expected inputs input\[1,3,112,112\], found input.1\[2,3,112,112\]"):
        pool.session(ARCFACE)
    assert not path.exists() and path.with_name(f"{path.name}.rejected-1").is_file()


def test_models_of_several_inputs_are_bound_by_name_only(tmp_path: Path, store: Store) -> None:
    swapped = renamed(nm.inswapper(), {"target": "target.1", "source": "source.1"})
    path = nm.save(swapped, tmp_path / "placed", "inswapper_128")
    assert "expected inputs target[1,3,128,128] source[1,512]" in (check_file(store.catalog.get("inswapper_128"),
                                                                                path) or "")

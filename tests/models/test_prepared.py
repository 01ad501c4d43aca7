"""Large models are prepared once for this CPU (ONNX Runtime's optimised graph, saved) and loaded from that copy
with optimisation and prepacking off: same outputs, made once, remade when the copy was changed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from slimfuse.bench import standins
from slimfuse.models.prepared import PreparedModels
from slimfuse.models.runtime import SessionSettings, create_session


def _outputs(path: Path, options: SessionSettings, image: np.ndarray) -> np.ndarray:
    session = create_session(path, options)
    return session.run(None, {"input": image})[0]


def test_prepared_once_same_outputs_and_remade_when_changed(tmp_path: Path) -> None:
    model = standins.build("gfpgan_1.4", tmp_path / "gfpgan_1.4.onnx", width=0.125)
    notes: list[str] = []
    prepared = PreparedModels(tmp_path / "prepared", notes.append, min_bytes=0)
    options = SessionSettings(intra_op_threads=1)
    path, used = prepared.session_input("gfpgan_1.4", model, options)
    assert path != model and path.is_file() and used.graph_optimization == "disable" and used.disable_prepacking
    assert len(notes) == 1 and "once" in notes[0]
    image = np.random.default_rng(0).uniform(-1, 1, (1, 3, 512, 512)).astype(np.float32)
    np.testing.assert_allclose(_outputs(path, used, image), _outputs(model, options, image), atol=1e-5)

    again = PreparedModels(tmp_path / "prepared", notes.append, min_bytes=0)  # a later process: found, checked
    assert again.session_input("gfpgan_1.4", model, options)[0] == path and len(notes) == 1
    path.write_bytes(path.read_bytes()[:-1] + b"\0")  # damaged: made again
    assert PreparedModels(tmp_path / "prepared", notes.append, min_bytes=0).session_input(
        "gfpgan_1.4", model, options)[0] == path and len(notes) == 2
    assert ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]) is not None


def test_small_models_and_other_providers_load_as_they_are(tmp_path: Path) -> None:
    model = standins.build("gfpgan_1.4", tmp_path / "gfpgan_1.4.onnx", width=0.125)
    prepared = PreparedModels(tmp_path / "prepared")  # the default threshold: this small file is not prepared
    options = SessionSettings()
    assert prepared.session_input("gfpgan_1.4", model, options) == (model, options)
    cuda = SessionSettings(providers=("cuda",))
    assert PreparedModels(tmp_path / "p", min_bytes=0).session_input("gfpgan_1.4", model, cuda) == (model, cuda)
    assert not (tmp_path / "prepared").exists()


def test_an_int8_variant_keeps_its_prepacked_weights(tmp_path: Path) -> None:
    # Its integer kernels would pack the weights again at every run: slower, and a higher peak.
    model = standins.build("gfpgan_1.4", tmp_path / "gfpgan_1.4.int8.onnx", width=0.125)
    prepared = PreparedModels(tmp_path / "prepared", min_bytes=0)
    path, used = prepared.session_input("gfpgan_1.4.int8", model, SessionSettings(intra_op_threads=1))
    assert path != model and used.graph_optimization == "disable" and not used.disable_prepacking
    assert prepared.session_input("gfpgan_1.4.int8-dynamic", model, SessionSettings())[1].disable_prepacking is False

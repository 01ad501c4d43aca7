"""A model that cannot be fetched (offline) is one line saying what to do; the sources tried ride on the error."""
from __future__ import annotations

import socket
import traceback
from pathlib import Path

import pytest

from slimfuse.errors import ModelUnavailableError
from slimfuse.models.catalog import Catalog
from slimfuse.models.spec import ModelSpec
from slimfuse.models.store import Store


def _closed_port() -> int:
    """A loopback port nothing listens on: connecting is refused at once, as on a machine without a network."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_neural_model_is_one_line_and_no_download_lines(tmp_path: Path,
                                                                       capfd: pytest.CaptureFixture[str]) -> None:
    port = _closed_port()
    urls = (f"http://127.0.0.1:{port}/releases/swapper.onnx", f"http://127.0.0.1:{port}/mirror/swapper.onnx")
    spec = ModelSpec(name="swapper", kind="swapper", licence="none", filename="swapper.onnx", sha256=None, size=None,
                     description="", source_name="swapper.onnx", source_sha256=None, urls=urls)
    messages: list[str] = []
    store = Store(home=tmp_path / "home", models_dir=tmp_path, catalog=Catalog((spec,)), notify=messages.append)
    with pytest.raises(ModelUnavailableError) as caught:
        store.path("swapper")
    error = caught.value
    assert messages == []  # nothing was downloading, so nothing says it is
    assert capfd.readouterr().err == ""  # pooch's own log lines stay quiet too
    assert error.exit_code == 14 and "\n" not in error.message and len(error.message) < 300
    assert "Place swapper.onnx in a folder and pass --models-dir FOLDER" in error.message
    assert str(port) not in error.message
    assert [entry.split(" ")[0] for entry in error.tried[1:]] == list(urls)
    assert error.tried[0] == f"--models-dir {tmp_path}"
    shown = "".join(traceback.format_exception(error))  # what --debug prints
    assert all(url in shown for url in urls)
    assert not (tmp_path / "home" / "models" / "swapper.onnx").exists()

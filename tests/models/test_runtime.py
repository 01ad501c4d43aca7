"""ONNX Runtime sessions: provider option dicts, session options, and loud (or strict) provider fall-back."""
from __future__ import annotations

from pathlib import Path

import onnxruntime as ort
import pytest

import neural_models as nm
from slimfuse.errors import ProviderUnavailableError
from slimfuse.models.providers import PROVIDERS
from slimfuse.models.runtime import (ProviderReport, SessionSettings, check_requested, create_session, provider_chain,
                                     provider_options, session_options)


def test_short_and_full_provider_names() -> None:
    options = SessionSettings(providers=("CUDAExecutionProvider", "cuda", "TensorRT", "cpu"))
    assert options.providers == ("cuda", "tensorrt", "cpu")
    with pytest.raises(ValueError, match="unknown execution provider"):
        SessionSettings(providers=("npu9000",))


def test_provider_option_dicts() -> None:
    options = SessionSettings(device_id=1, gpu_mem_limit=3 << 30, cudnn_conv_algo_search="DEFAULT",
                             arena_extend_strategy="kNextPowerOfTwo", tensorrt_fp16=True,
                             tensorrt_cache_dir=Path("/cache/trt"))
    assert provider_options("cuda", options) == {
        "device_id": 1, "gpu_mem_limit": 3 << 30, "arena_extend_strategy": "kNextPowerOfTwo",
        "cudnn_conv_algo_search": "DEFAULT", "do_copy_in_default_stream": True}
    assert provider_options("tensorrt", options) == {
        "device_id": 1, "trt_fp16_enable": True, "trt_max_workspace_size": 3 << 30,
        "trt_engine_cache_enable": True, "trt_engine_cache_path": "/cache/trt",
        "trt_timing_cache_enable": True, "trt_timing_cache_path": "/cache/trt"}
    assert provider_options("rocm", options) == {
        "device_id": 1, "gpu_mem_limit": 3 << 30, "arena_extend_strategy": "kNextPowerOfTwo"}
    assert provider_options("openvino", options) == {"device_type": "GPU.1", "precision": "FP32"}
    assert provider_options("openvino", SessionSettings())["device_type"] == "GPU"
    assert provider_options("directml", options) == {"device_id": 1}
    assert provider_options("coreml", options) == {"SpecializationStrategy": "FastPrediction"}
    assert provider_options("cpu", options) == {}
    defaults = provider_options("cuda", SessionSettings())  # no limit unless asked; the frugal arena growth
    assert "gpu_mem_limit" not in defaults and defaults["arena_extend_strategy"] == "kSameAsRequested"
    assert provider_options("tensorrt", SessionSettings()) == {"device_id": 0, "trt_fp16_enable": False}
    chain = provider_chain(("tensorrt", "cuda", "cpu"), options)
    assert [entry[0] if isinstance(entry, tuple) else entry for entry in chain] == [
        PROVIDERS["tensorrt"], PROVIDERS["cuda"], PROVIDERS["cpu"]]


def test_session_options_come_from_one_place() -> None:
    settings = session_options(SessionSettings(graph_optimization="basic", intra_op_threads=3, inter_op_threads=2,
                                              enable_mem_pattern=False, enable_cpu_arena=False))
    assert settings.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert (settings.intra_op_num_threads, settings.inter_op_num_threads) == (3, 2)
    assert not settings.enable_mem_pattern and not settings.enable_cpu_mem_arena


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    return nm.save(nm.identity_enhancer("gfpgan_1.4"), tmp_path, "gfpgan_1.4")


def test_a_missing_provider_is_reported_once_and_the_cpu_used(model_file: Path) -> None:
    messages: list[str] = []
    report = ProviderReport(("cuda",))
    options = SessionSettings(providers=("cuda",))
    for _ in range(2):
        session = create_session(model_file, options, report, messages.append, "gfpgan_1.4")
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert len(messages) == 1
    assert messages[0].startswith("CUDA execution provider unavailable (not in this onnxruntime")
    assert messages[0].endswith("; using the CPU")
    assert report.fell_back and report.to_dict()["problems"][0]["provider"] == "cuda"
    assert report.used == {"gfpgan_1.4": ("cpu",)}


def test_a_provider_that_fails_to_initialise_is_caught(model_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As if this onnxruntime had CUDA but the device or its libraries did not come up: ORT then runs the session
    # on the CPU without raising; only session.get_providers() tells.
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    messages: list[str] = []
    report = ProviderReport(("cuda",))
    session = create_session(model_file, SessionSettings(providers=("cuda",)), report, messages.append, "m")
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert messages == ["CUDA execution provider unavailable (failed to initialise (missing GPU "
                        "libraries or device?)); using the CPU"]
    assert report.problems[0].model == "m"
    with pytest.raises(ProviderUnavailableError) as caught:
        create_session(model_file, SessionSettings(providers=("cuda",), strict_provider=True))
    assert caught.value.exit_code == 17 and "CUDA execution provider unavailable" in caught.value.message


def test_strict_provider_refuses_before_anything_is_loaded() -> None:
    with pytest.raises(ProviderUnavailableError, match="--strict-provider"):
        check_requested(SessionSettings(providers=("tensorrt", "cuda"), strict_provider=True),
                        ProviderReport(("tensorrt", "cuda")), lambda message: None)


def test_next_requested_provider_is_named_as_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    messages: list[str] = []
    usable = check_requested(SessionSettings(providers=("tensorrt", "cuda")), ProviderReport(("tensorrt", "cuda")),
                             messages.append)
    assert usable == ("cuda",)
    assert messages[0].startswith("TensorRT execution provider unavailable") and \
        messages[0].endswith("; using CUDA")

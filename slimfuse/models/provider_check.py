"""Which execution providers actually work here: a tiny generated ONNX model is loaded and run on each, and the
real error line is kept when one fails, with the fix for it (used by `slimfuse doctor`)."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from slimfuse.models.providers import PROVIDERS
from slimfuse.models.runtime import ProviderReport, SessionSettings, available_providers, create_session


@dataclass(frozen=True)
class ProviderCheck:
    provider: str
    in_build: bool
    """This onnxruntime package was built with the provider."""
    works: bool
    """A session was created on it and ran."""
    error: str | None = None
    fix: str | None = None


def fix_for(provider: str, in_build: bool) -> str | None:
    """What to do so that `provider` works: install the right onnxruntime package, or what it needs at run time."""
    series = ".".join(ort.__version__.split(".")[:2])
    swap = "pip uninstall -y onnxruntime && "
    if provider in ("cuda", "tensorrt") and not in_build:
        return f"{swap}pip install onnxruntime-gpu=={series}.* (CUDA 13, cuDNN 9; an NVIDIA driver for CUDA 13)"
    if provider == "cuda":
        return (f"install the CUDA 13 and cuDNN 9 libraries (pip install 'onnxruntime-gpu[cuda,cudnn]=={series}.*') "
                "and check that nvidia-smi sees the GPU")
    if provider == "tensorrt":
        return "install TensorRT 10 (pip install tensorrt) and put its libraries on the library path"
    if provider == "rocm" and not in_build:
        return f"{swap}pip install onnxruntime-rocm (built for your ROCm version)"
    if provider == "openvino" and not in_build:
        return f"{swap}pip install onnxruntime-openvino"
    if provider == "directml" and not in_build:
        return f"{swap}pip install onnxruntime-directml (Windows 10 or later)"
    if provider == "coreml" and not in_build:
        return "use macOS: the onnxruntime package for macOS includes CoreML"
    return None if in_build else f"install an onnxruntime package built with {provider}"


def write_tiny_model(path: Path) -> None:
    """y = x + x on a [1, 4] float tensor: the smallest model every provider can run."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "tiny", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # old enough for every onnxruntime slimfuse supports
    onnx.save(model, str(path))


def check_provider(provider: str, model: Path, device_id: int = 0) -> ProviderCheck:
    in_build = PROVIDERS[provider] in available_providers()
    report = ProviderReport((provider,))  # a provider that is missing or fails to start is recorded here
    try:
        session = create_session(model, SessionSettings(providers=(provider,), device_id=device_id), report)
        result = session.run(None, {"x": np.ones((1, 4), np.float32)})[0]
    except Exception as exc:  # noqa: BLE001 - whatever the provider raised is the answer
        return ProviderCheck(provider, in_build, False, _reason(exc), fix_for(provider, in_build))
    problem = report.problem(provider)
    if problem is not None:
        return ProviderCheck(provider, in_build, False, problem.reason, fix_for(provider, in_build))
    if not np.allclose(result, 2.0):
        return ProviderCheck(provider, in_build, False, "ran but computed a wrong result", None)
    return ProviderCheck(provider, in_build, True)


def check_providers(providers: tuple[str, ...], device_id: int = 0) -> tuple[ProviderCheck, ...]:
    with tempfile.TemporaryDirectory(prefix="slimfuse-doctor-") as folder:
        model = Path(folder) / "tiny.onnx"
        write_tiny_model(model)
        return tuple(check_provider(provider, model, device_id) for provider in providers)


def _reason(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__

"""The execution providers ONNX Runtime is asked for by short name, and the words of their settings (read by the
option table without loading ONNX Runtime)."""
from __future__ import annotations

from typing import Literal

PROVIDERS: dict[str, str] = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "rocm": "ROCMExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "directml": "DmlExecutionProvider",
}
LABELS: dict[str, str] = {
    "cpu": "CPU", "cuda": "CUDA", "tensorrt": "TensorRT", "rocm": "ROCm", "openvino": "OpenVINO",
    "coreml": "CoreML", "directml": "DirectML",
}
ArenaExtendStrategy = Literal["kNextPowerOfTwo", "kSameAsRequested"]
ConvAlgoSearch = Literal["EXHAUSTIVE", "HEURISTIC", "DEFAULT"]


def short_name(provider: str) -> str:
    """'cuda' for 'cuda', 'CUDA' or 'CUDAExecutionProvider'; ValueError for an unknown provider."""
    lowered = provider.strip().lower()
    if lowered in PROVIDERS:
        return lowered
    for short, full in PROVIDERS.items():
        if full.lower() == lowered:
            return short
    raise ValueError(f"unknown execution provider {provider!r}; known: {', '.join(PROVIDERS)}")

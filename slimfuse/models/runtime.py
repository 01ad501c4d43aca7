"""ONNX Runtime sessions: the one place session options and providers are chosen."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnxruntime as ort


@dataclass(frozen=True)
class RuntimeOptions:
    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    intra_op_threads: int = 0
    """0 lets ONNX Runtime choose (one thread per physical core)."""
    enable_cpu_arena: bool = True
    enable_mem_pattern: bool = True


def create_session(path: Path, options: RuntimeOptions) -> ort.InferenceSession:
    settings = ort.SessionOptions()
    settings.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    settings.intra_op_num_threads = options.intra_op_threads
    settings.inter_op_num_threads = 1
    settings.enable_cpu_mem_arena = options.enable_cpu_arena
    settings.enable_mem_pattern = options.enable_mem_pattern
    settings.log_severity_level = 3  # errors only: ORT's warnings are not the user's business
    return ort.InferenceSession(str(path), sess_options=settings, providers=list(options.providers))

"""ONNX export of the reference architectures with exactly the inputs and outputs of their catalog entries, checked
by loading the file with ONNX Runtime: its tensors against the entry, its output against PyTorch's."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

from slimfuse.errors import ModelInvalidError
from slimfuse.models.validate import ORT_TYPES, FoundTensor, describe, input_mismatch, session_inputs
from slimfuse.optimize.torch.architectures import Architecture

OPSET = 17
"""Within what every ONNX Runtime the project supports (>= 1.18) runs."""
TOLERANCE = 1e-3


@dataclass(frozen=True)
class ExportResult:
    path: Path
    max_abs_error: float
    """Largest difference between ONNX Runtime's output and PyTorch's on the example inputs."""
    inputs: tuple[FoundTensor, ...]
    outputs: tuple[FoundTensor, ...]


def export_onnx(architecture: Architecture, model: nn.Module, path: Path, tolerance: float = TOLERANCE) -> ExportResult:
    """Write `model` (an instance of the architecture) as ONNX at `path` and check it; ModelInvalidError when its
    tensors are not the catalog entry's or its output differs from PyTorch's by more than `tolerance`."""
    io = architecture.io
    model = model.cpu().eval()
    inputs = architecture.example_inputs()
    with torch.no_grad(), warnings.catch_warnings():
        # The TorchScript exporter (dynamo=False) needs no onnxscript; torch 2.13 marks it deprecated, and its
        # tracer comments on constant folding, shapes and InstanceNorm (checked below by running the file instead).
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, str(path), input_names=[spec.name for spec in io.inputs],
                          output_names=[spec.name for spec in io.outputs], opset_version=OPSET, dynamo=False)
        expected = model(*inputs).numpy()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    found_inputs = session_inputs(session)
    found_outputs = [FoundTensor(arg.name, tuple(arg.shape), ORT_TYPES.get(arg.type, arg.type))
                     for arg in session.get_outputs()]
    problem = input_mismatch(io.inputs, found_inputs)
    wanted_outputs = [FoundTensor(spec.name, spec.shape, spec.dtype) for spec in io.outputs]
    if problem is None and found_outputs != wanted_outputs:
        problem = f"expected outputs {describe(wanted_outputs)}, found {describe(found_outputs)}"
    if problem is not None:
        raise ModelInvalidError(path, f"exported {architecture.name} is not {architecture.catalog_name}'s I/O: {problem}")
    actual = session.run(None, {spec.name: tensor.numpy() for spec, tensor in zip(io.inputs, inputs, strict=True)})[0]
    error = float(np.max(np.abs(actual - expected)))
    if not error <= tolerance:
        raise ModelInvalidError(path, f"ONNX Runtime's output differs from PyTorch's by {error:.3g} (> {tolerance:g})")
    return ExportResult(Path(path), error, tuple(found_inputs), tuple(found_outputs))

"""Is a model file the model its catalog entry describes? Its inputs' names, shapes and element types.

A fixed size in the catalog must match the file's fixed size; a named axis in the catalog (such as "batch") or a
free axis in the file accepts any size. A model of one input whose tensor has another name but the catalog's shape
and type is bound by position: insightface's own w600k_r50.onnx (buffalo_l) names its input `input.1` where
FaceFusion's copy says `input`. Outputs are not checked (the processors read the first by position).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from slimfuse.models.spec import ModelSpec, TensorSpec

ORT_TYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(uint8)": "uint8", "tensor(bool)": "bool",
}
ONNX_TYPES = {1: "float32", 11: "float64", 10: "float16", 7: "int64", 6: "int32", 2: "uint8", 9: "bool"}

Dim = int | str | None


@dataclass(frozen=True)
class FoundTensor:
    name: str
    shape: tuple[Dim, ...]
    dtype: str


def describe(tensors: Iterable[TensorSpec | FoundTensor]) -> str:
    """'target[1,3,128,128] source[1,512]' (element types other than float32 are named, optional inputs marked)."""
    parts = []
    for tensor in tensors:
        dims = ",".join("?" if dim is None else str(dim) for dim in tensor.shape)
        kind = "" if tensor.dtype == "float32" else f" {tensor.dtype}"
        optional = " (optional)" if isinstance(tensor, TensorSpec) and tensor.optional else ""
        parts.append(f"{tensor.name}[{dims}]{kind}{optional}")
    return " ".join(parts) or "no inputs"


def bind_inputs(expected: Sequence[TensorSpec], found: Sequence[FoundTensor]) -> dict[str, str] | None:
    """The file's input name for each catalog input name it has, when `found` are the inputs `expected` (an optional
    one present or not): by name, or by position for a single input of the expected shape and type; None when they
    are not."""
    by_name = {tensor.name: tensor for tensor in found}
    present = [spec for spec in expected if not spec.optional or spec.name in by_name]
    if len(found) != len(present):
        return None
    if all(spec.name in by_name and _compatible(spec, by_name[spec.name]) for spec in present):
        return {spec.name: spec.name for spec in present}
    if len(expected) == 1 and _compatible(expected[0], found[0]):
        return {expected[0].name: found[0].name}
    return None


def input_mismatch(expected: Sequence[TensorSpec], found: Sequence[FoundTensor]) -> str | None:
    """None when `found` are the inputs `expected` (see `bind_inputs`); else 'expected ..., found ...' for a
    one-line error."""
    if bind_inputs(expected, found) is not None:
        return None
    return f"expected inputs {describe(expected)}, found {describe(found)}"


def session_inputs(session: object) -> list[FoundTensor]:
    """The inputs of an onnxruntime InferenceSession."""
    return [FoundTensor(arg.name, tuple(_dim(d) for d in arg.shape), ORT_TYPES.get(arg.type, arg.type))
            for arg in session.get_inputs()]  # type: ignore[attr-defined]


def file_inputs(path: Path) -> list[FoundTensor]:
    """The graph inputs of an ONNX file (initializers excluded), read with onnx; raises on an unreadable file."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    initializers = {init.name for init in model.graph.initializer}
    found = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim)
        found.append(FoundTensor(value.name, dims, ONNX_TYPES.get(tensor.elem_type, str(tensor.elem_type))))
    return found


def check_file(spec: ModelSpec, path: Path) -> str | None:
    """None when the file at `path` loads as ONNX with the inputs of `spec`; else what was expected and found."""
    if spec.io is None:
        return None
    try:
        found = file_inputs(path)
    except Exception as exc:  # noqa: BLE001 - onnx raises DecodeError, ValueError, ... for a bad file
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (f"expected an ONNX model with inputs {describe(spec.io.inputs)}, found a file onnx cannot read "
                f"({path.stat().st_size} bytes; {reason})")
    return input_mismatch(spec.io.inputs, found)


def _compatible(spec: TensorSpec, found: FoundTensor) -> bool:
    if spec.dtype != found.dtype or len(spec.shape) != len(found.shape):
        return False
    return all(isinstance(want, str) or not isinstance(have, int) or want == have
               for want, have in zip(spec.shape, found.shape, strict=True))


def _dim(value: object) -> Dim:
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str) and value:
        return value
    return None

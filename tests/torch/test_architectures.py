"""The reference architectures: real sizes (counted on the meta device), and ONNX exports with exactly the catalog
entries' inputs and outputs whose outputs match PyTorch's."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from slimfuse.models.validate import file_inputs
from slimfuse.optimize.torch.architectures import ARCHITECTURES
from slimfuse.optimize.torch.blocks import parameter_count
from slimfuse.optimize.torch.export import export_onnx

TINY = 4
"""Channel width in tests: the real graphs with a few hundred thousand parameters."""
EXPECTED_MILLIONS = {"gfpgan": (75, 90), "simswap": (50, 60), "codeformer": (70, 100)}


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_default_width_has_the_real_parameter_count(name: str) -> None:
    model = ARCHITECTURES[name].build(device="meta")
    low, high = EXPECTED_MILLIONS[name]
    assert low <= parameter_count(model) / 1e6 <= high
    assert all(parameter.is_meta for parameter in model.parameters())


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_tiny_export_has_the_catalog_io_and_matches_torch(name: str, tmp_path: Path) -> None:
    architecture = ARCHITECTURES[name]
    result = export_onnx(architecture, architecture.build(TINY), tmp_path / f"{name}.onnx")
    io = architecture.io
    assert [(t.name, t.shape, t.dtype) for t in result.inputs] == [(s.name, s.shape, s.dtype) for s in io.inputs]
    assert [(t.name, t.shape, t.dtype) for t in result.outputs] == [(s.name, s.shape, s.dtype) for s in io.outputs]
    assert [(t.name, t.shape, t.dtype) for t in file_inputs(result.path)] == [(s.name, s.shape, s.dtype) for s in io.inputs]
    assert result.max_abs_error <= 1e-3


def test_same_seed_same_weights_on_any_build() -> None:
    architecture = ARCHITECTURES["simswap"]
    first, second, other = architecture.build(TINY), architecture.build(TINY), architecture.build(TINY, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), other.state_dict().values(), strict=True))

"""Structured pruning: the parameters fall by the ratio asked, the outputs keep their shapes, the pruned shapes
replay onto a fresh (meta) model, and the gated climb stops at the last step that passes."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from slimfuse.models.spec import GateSpec
from slimfuse.optimize.metrics import psnr
from slimfuse.optimize.torch.architectures import ARCHITECTURES
from slimfuse.optimize.torch.blocks import parameter_count
from slimfuse.optimize.torch.pruning import prune, prune_gated, replay

WIDTH, SIZE = 8, 64


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_pruning_removes_the_ratio_and_keeps_the_output_shape(name: str) -> None:
    architecture = ARCHITECTURES[name]
    model = architecture.build(WIDTH, size=SIZE)
    inputs = architecture.example_inputs(size=SIZE)
    before = parameter_count(model)
    history = prune(model, inputs, 0.3)
    removed = 1 - parameter_count(model) / before
    assert 0.2 <= removed <= 0.4, removed
    with torch.no_grad():
        assert model(*inputs).shape == (1, 3, SIZE, SIZE)
    shaped = replay(architecture.build(WIDTH, device="meta", size=SIZE), architecture.example_inputs("meta", size=SIZE),
                    history)
    assert {name: tensor.shape for name, tensor in shaped.state_dict().items()} == \
        {name: tensor.shape for name, tensor in model.state_dict().items()}


def _convnet() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(64, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 3, 3, padding=1)).eval()


def test_plain_model_keeps_its_first_and_last_layers() -> None:
    model, x = _convnet(), torch.randn(1, 3, 16, 16)
    prune(model, (x,), 0.5)
    assert model[0].in_channels == 3 and model[-1].out_channels == 3
    assert model[2].out_channels < 64
    with torch.no_grad():
        assert model(x).shape == (1, 3, 16, 16)


def test_gate_stops_at_the_last_passing_step() -> None:
    model, x = _convnet(), torch.randn(1, 3, 16, 16)
    original = parameter_count(model)
    kept_share = GateSpec("kept", 0.65, higher_is_better=True)
    result = prune_gated(model, (x,), lambda candidate: parameter_count(candidate) / original, kept_share)
    assert [step.verdict for step in result.steps] == ["pass"] * (len(result.steps) - 1) + ["fail"]
    last_pass = result.steps[-2]
    assert result.ratio == last_pass.ratio and parameter_count(result.model) == last_pass.parameters
    assert [step.ratio for step in result.steps] == [round(0.1 * (i + 1), 6) for i in range(len(result.steps))]
    assert parameter_count(model) == original  # the original is left as it was


def test_psnr_gate_on_outputs() -> None:
    model, x = _convnet(), torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        reference = model(x).numpy()

    def output_psnr(candidate: nn.Module) -> float:
        return psnr(reference, candidate(x).numpy(), peak=float(abs(reference).max()))

    result = prune_gated(model, (x,), output_psnr, GateSpec("psnr_db", 200.0, higher_is_better=True))
    assert result.ratio == 0.0 and result.model is model and len(result.steps) == 1 and not result.steps[0].passed

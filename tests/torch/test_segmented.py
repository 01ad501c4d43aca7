"""Segmented execution: the same result as the whole model, with only one segment's weights resident at a time."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from slimfuse.optimize.torch.architectures import ARCHITECTURES
from slimfuse.optimize.torch.checkpoint import save_weights
from slimfuse.optimize.torch.measure import SEGMENTED, FP32, Job, Workspace, measure_apart
from slimfuse.optimize.torch.segmented import SegmentedModel, SegmentedRunner, resident_bytes, write_segments

WIDTH, SIZE = 4, 128


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_segments_match_the_whole_model_with_less_resident(name: str, tmp_path: Path) -> None:
    architecture = ARCHITECTURES[name]
    model = architecture.build(WIDTH, size=SIZE)
    inputs = architecture.example_inputs(size=SIZE)
    with torch.no_grad():
        expected = model(*inputs)
    write_segments(model.segments(), tmp_path)
    segmented = SegmentedModel(architecture.build(WIDTH, device="meta", size=SIZE), tmp_path, "cpu")
    with torch.no_grad():
        actual = segmented(*inputs)
    assert (actual - expected).abs().max() <= 1e-5
    whole = resident_bytes(model)
    during = segmented.runner.resident_during
    assert len(during) == len(model.segments()) and max(during) < whole / 2
    assert resident_bytes(segmented) == 0  # nothing stays between calls


def test_plain_list_of_segments(tmp_path: Path) -> None:
    torch.manual_seed(0)
    parts = [nn.Sequential(nn.Linear(64, 256), nn.ReLU()), nn.Sequential(nn.Linear(256, 256), nn.ReLU()),
             nn.Linear(256, 8)]
    x = torch.randn(3, 64)
    with torch.no_grad():
        expected = nn.Sequential(*parts)(x)
        runner = SegmentedRunner(parts, write_segments(parts, tmp_path), "cpu")
        assert torch.allclose(runner(x), expected, atol=1e-6)
    assert max(runner.resident_during) == (256 * 256 + 256) * 4


@pytest.mark.slow
def test_resident_set_of_a_segmented_run_is_smaller(tmp_path: Path) -> None:
    """Peak RSS in fresh processes: weights of a few MB make the difference visible above the activations."""
    architecture = ARCHITECTURES["simswap"]
    workspace = Workspace.in_folder(tmp_path)
    model = architecture.build(16, size=SIZE)  # 3.4M parameters, 14 MB
    save_weights(model, workspace.weights)
    write_segments(model.segments(), workspace.segments)
    whole, segmented = (measure_apart(Job("simswap", 16, SIZE, technique, "cpu", 1, workspace))
                        for technique in (FP32, SEGMENTED))
    assert whole.weight_bytes == resident_bytes(model) and segmented.weight_bytes < whole.weight_bytes / 4
    assert segmented.peak_bytes < whole.peak_bytes - whole.weight_bytes / 2
    assert (torch.from_numpy(segmented.outputs[0]) - torch.from_numpy(whole.outputs[0])).abs().max() <= 1e-5

"""Segmented execution: a model split into sequential segments runs with only one segment's weights resident.

Each segment's tensors are written once to a safetensors file of their own; the segments themselves then keep no
memory (their tensors move to the meta device). A call loads a segment's file straight onto the compute device
(memory-mapped on the CPU), runs it on the boundary activations, and drops its weights before the next one loads;
between segments only the boundary (the activations the rest still needs) is held. The arithmetic is the model's
own, so the result equals the whole model's.

Segments are a list of modules each mapping the boundary to the next (a plain tensor through `nn.Sequential`
parts, say), or a StagedModel's `segments()`, which pass its state dict along.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import nn

from slimfuse.optimize.torch.blocks import StagedModel
from slimfuse.optimize.torch.checkpoint import save_weights


def segment_files(folder: Path, count: int) -> list[Path]:
    return [folder / f"segment_{index:03d}.safetensors" for index in range(count)]


def write_segments(segments: Sequence[nn.Module], folder: Path) -> list[Path]:
    """One safetensors file per segment (the segments are left as they are)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = segment_files(folder, len(segments))
    for segment, path in zip(segments, paths, strict=True):
        save_weights(segment, path)
    return paths


def resident_bytes(module: nn.Module) -> int:
    """Bytes of the module's parameters and buffers that hold memory (not on the meta device)."""
    return sum(tensor.numel() * tensor.element_size() for tensor in (*module.parameters(), *module.buffers())
               if not tensor.is_meta)


def to_device(boundary: Any, device: torch.device) -> Any:
    if isinstance(boundary, torch.Tensor):
        return boundary.to(device)
    if isinstance(boundary, dict):
        return {key: to_device(value, device) for key, value in boundary.items()}
    if isinstance(boundary, tuple | list):
        return type(boundary)(to_device(value, device) for value in boundary)
    return boundary


class SegmentedRunner:
    """Runs `segments` in turn, each loaded from its file onto `device` only while it runs.

    `resident_during[i]` is the bytes of weights resident (over all segments) while segment i ran, at the last
    call: the measure that only one segment's weights are held at a time."""

    def __init__(self, segments: Sequence[nn.Module], paths: Sequence[Path], device: torch.device | str) -> None:
        if len(segments) != len(paths):
            raise ValueError(f"{len(segments)} segments but {len(paths)} files")
        self.segments = list(segments)
        self.paths = list(paths)
        self.device = torch.device(device)
        self.resident_during: list[int] = []
        for segment in self.segments:
            segment.to("meta")  # the files hold the weights now

    def __call__(self, boundary: Any) -> Any:
        resident = []
        for segment, path in zip(self.segments, self.paths, strict=True):
            segment.load_state_dict(load_file(path, device=str(self.device)), assign=True)
            resident.append(sum(resident_bytes(part) for part in self.segments))
            boundary = segment(to_device(boundary, self.device))
            segment.to("meta")
        self.resident_during = resident
        return boundary


class SegmentedModel(nn.Module):
    """A StagedModel run segment by segment from the files in `folder` (written by `write_segments`)."""

    def __init__(self, model: StagedModel, folder: Path, device: torch.device | str) -> None:
        super().__init__()
        self.model = model
        segments = model.segments()
        self.runner = SegmentedRunner(segments, segment_files(folder, len(segments)), device)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model.final_output(self.runner(self.model.initial_state(*inputs)))

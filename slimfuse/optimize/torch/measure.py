"""One technique, measured in a process of its own: peak memory, latency per call and the outputs.

A fresh spawned process per technique, so one technique's peak cannot hide behind another's. Every model is
first shaped on the meta device (structure only, no tensor memory); the baseline is taken then, after the inputs
are built, and the peak covers loading the weights from the files the report prepared and every call (on the CPU
the process's peak resident set, VmHWM, reset at the baseline; on CUDA torch.cuda.max_memory_allocated). So no
technique pays for a full-size model it does not use: the segmented one reads one segment at a time, the pruned
one only the pruned weights.

All techniques run the same short clip: the example inputs shifted by one pixel per frame, each frame with a
vector for the attention cache's gate (its thumbnail, mean removed).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import psutil
import torch
from torch import nn

from slimfuse.memory.probe import peak_rss_bytes, reset_peak_rss
from slimfuse.optimize.torch.architectures import ARCHITECTURES, Architecture
from slimfuse.optimize.torch.attention_cache import FrameGate, cache_attention
from slimfuse.optimize.torch.blocks import StagedModel, parameter_count
from slimfuse.optimize.torch.checkpoint import load_weights
from slimfuse.optimize.torch.precision import MixedPrecision
from slimfuse.optimize.torch.pruning import replay
from slimfuse.optimize.torch.segmented import SegmentedModel, resident_bytes

FP32, AUTOCAST, PRUNED, SEGMENTED, CACHED = "fp32", "autocast", "pruned", "segmented", "cached_attention"
TECHNIQUES = (FP32, AUTOCAST, PRUNED, SEGMENTED, CACHED)
THUMBNAIL = 8
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
MMAP_THRESHOLD_BYTES = 1 << 20

Frame = tuple[tuple[torch.Tensor, ...], torch.Tensor]
"""A frame's model inputs and its vector for the attention cache's gate."""


@dataclass(frozen=True)
class Workspace:
    """The files the report prepares once for every technique."""

    weights: Path
    segments: Path
    """The folder of the per-segment files."""
    pruned_weights: Path
    pruned_history: Path

    @classmethod
    def in_folder(cls, folder: Path) -> Workspace:
        return cls(folder / "model.safetensors", folder / "segments", folder / "pruned.safetensors", folder / "pruned.json")


@dataclass(frozen=True)
class Job:
    architecture: str
    width: int | None
    size: int | None
    technique: str
    device: str
    frames: int
    workspace: Workspace


@dataclass(frozen=True)
class Measurement:
    technique: str
    parameters: int
    weight_bytes: int
    """Weights resident at once (for the segmented model: the largest segment)."""
    peak_bytes: int
    latencies_ms: tuple[float, ...]
    outputs: tuple[np.ndarray, ...]
    """The output of each frame."""
    notes: str

    @property
    def latency_ms(self) -> float:
        return statistics.median(self.latencies_ms)


def return_freed_memory() -> bool:
    """Fix glibc's mmap threshold at 1 MiB for this process: freed blocks of that size or more go back to the system
    at once. By default glibc raises the threshold as large blocks are freed and then keeps freed activations in
    its heap, so the resident set stays at its high-water mark and hides what a technique saves. False where the
    C library has no mallopt (not glibc)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError, TypeError):
        return False


class PeakMeter:
    """Memory above a baseline: CUDA's allocator peak on a GPU, the process's peak resident set on the CPU."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        gc.collect()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            self.base = torch.cuda.memory_allocated(device)
        else:
            reset_peak_rss()  # where the platform cannot, the peak since the process started stays (an overestimate)
            self.base = psutil.Process().memory_info().rss

    def peak(self) -> int:
        if self.device.type == "cuda":
            return torch.cuda.max_memory_allocated(self.device) - self.base
        return max(peak_rss_bytes() - self.base, 0)


def clip(architecture: Architecture, count: int, device: torch.device, size: int | None = None) -> list[Frame]:
    base = architecture.example_inputs(device, size=size)
    frames = []
    for shift in range(count):
        inputs = tuple(tensor.roll(shift, dims=-1) if tensor.dim() == 4 else tensor for tensor in base)
        thumbnail = nn.functional.adaptive_avg_pool2d(inputs[0], THUMBNAIL).flatten()
        frames.append((inputs, thumbnail - thumbnail.mean()))
    return frames


def _shape(job: Job) -> StagedModel:
    """The technique's model on the meta device: its structure, no weights (pruned: replayed to the pruned
    shapes, which takes no tensor memory but imports PyTorch's meta kernels, so it happens before the baseline)."""
    architecture = ARCHITECTURES[job.architecture]
    model = architecture.build(job.width, device="meta", size=job.size)
    if job.technique == PRUNED:
        history = json.loads(job.workspace.pruned_history.read_text(encoding="utf-8"))
        replay(model, architecture.example_inputs("meta", size=job.size), history)
    return model


def _load(job: Job, model: StagedModel, device: torch.device) -> tuple[nn.Module, FrameGate | None]:
    """The technique's runnable model, its weights in memory (the segmented one's stay in their files)."""
    if job.technique == SEGMENTED:
        return SegmentedModel(model, job.workspace.segments, device), None
    weights = job.workspace.pruned_weights if job.technique == PRUNED else job.workspace.weights
    loaded = load_weights(model, weights).to(device)
    if job.technique == AUTOCAST:
        return MixedPrecision(loaded), None
    return loaded, cache_attention(loaded) if job.technique == CACHED else None


def _call(model: nn.Module, frame: Frame, gate: FrameGate | None, device: torch.device) -> tuple[torch.Tensor, float]:
    inputs, vector = frame
    if gate is not None:
        gate.next_frame(vector)
    start = time.perf_counter()
    output = model(*inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return output, (time.perf_counter() - start) * 1000.0


def _notes(model: nn.Module, gate: FrameGate | None) -> str:
    if isinstance(model, MixedPrecision):
        return f"{str(model.dtype).removeprefix('torch.')} autocast, normalisations and softmax in float32"
    if isinstance(model, SegmentedModel):
        return f"{len(model.runner.segments)} segments loaded one at a time"
    if gate is not None:
        return (f"keys/values reused on {gate.reused_frames} of {gate.reused_frames + gate.refreshed_frames} calls "
                f"(threshold {gate.threshold}, refresh every {gate.refresh_every})")
    return ""


def measure(job: Job) -> Measurement:
    """In a process of its own (it changes the process's allocator): shape the technique's model, then from the
    baseline on load its weights and run the clip after one warm-up call."""
    device = torch.device(job.device)
    architecture = ARCHITECTURES[job.architecture]
    return_freed_memory()
    frames = clip(architecture, job.frames, device, job.size)
    shaped = _shape(job)  # outside inference mode: replaying a pruning traces through autograd
    meter = PeakMeter(device)
    model, gate = _load(job, shaped, device)
    with torch.inference_mode():
        _call(model, frames[0], gate, device)
        timed = [_call(model, frame, gate, device) for frame in frames]
    peak = meter.peak()
    segmented = isinstance(model, SegmentedModel)
    inner = model.model if isinstance(model, MixedPrecision | SegmentedModel) else model
    return Measurement(
        technique=job.technique,
        parameters=parameter_count(inner),
        weight_bytes=max(model.runner.resident_during) if segmented else resident_bytes(model),
        peak_bytes=peak,
        latencies_ms=tuple(latency for _, latency in timed),
        outputs=tuple(output.float().cpu().numpy() for output, _ in timed),
        notes=_notes(model, gate))


def measure_apart(job: Job) -> Measurement:
    """`measure` in a freshly spawned process (nothing inherited: its peak is its own)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(measure, job).result()

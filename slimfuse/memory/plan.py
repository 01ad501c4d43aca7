"""MemoryPlan: before a run, fit it into `--memory-budget MB` or say what the smallest workable budget is.

The budget counts the process's RSS on the CPU provider (the measured baseline of the process, the models, their
activations and the frames in flight) and device memory on a GPU provider (the models and their activations; the
frames stay on the host). A model's resident bytes are estimated before anything is loaded: its weights (the file's
size, what the pool counts) plus activations per batch item, `ACTIVATION_FACTOR[kind]` times the bytes of its
float32 input at the size it runs at.

What the plan gives up, in order, when the job does not fit: wide batches (halved down to 1), the frame enhancer's
tile size (halved down to SMALLEST_TILE), threaded video codecs (one thread each), frames in flight (video queues
halved down to 1), frames rendered at once (down to 1), then keeping every model resident together (the pool's
budget shrinks and models are reloaded when needed, down to the largest one alone). Below that the job cannot fit:
MemoryBudgetError. The plan fills PLANNED_SHARE of the budget, leaving a margin for what an estimate cannot know;
the first batch of each generator refines it (slimfuse.memory.batching).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from math import prod
from typing import Any, Literal

from slimfuse.errors import MemoryBudgetError
from slimfuse.models.spec import ModelSpec

MB = 1 << 20
Device = Literal["cpu", "gpu"]

# Peak activation bytes per byte of float32 input, per batch item (rough, from the architectures: generators keep
# wide feature maps at full resolution, detectors and landmarkers shrink theirs fast).
ACTIVATION_FACTOR: Mapping[str, float] = {
    "swapper": 256.0, "deep_swapper": 256.0, "enhancer": 128.0, "frame_enhancer": 256.0, "recognizer": 64.0,
    "detector": 64.0, "landmarker": 64.0, "occluder": 64.0, "parser": 64.0, "embedding_converter": 4.0,
    "age_modifier": 256.0, "frame_colorizer": 256.0, "lip_syncer": 256.0, "voice_extractor": 32.0,
    "background_remover": 128.0,
}
# A model without a described input (the embedded MediaPipe and dlib models): activations as a share of its file.
UNDESCRIBED_ACTIVATION = 1.0
# Kinds whose batches the plan sizes (through memory.batching); the frame enhancer runs one tile at a time, the
# analysis models one face.
BATCHED_KINDS = frozenset({"swapper", "deep_swapper", "enhancer"})
# The large models: a strict memory level keeps one of them resident at a time.
GENERATOR_KINDS = frozenset({"swapper", "deep_swapper", "enhancer", "frame_enhancer", "age_modifier",
                             "frame_colorizer", "lip_syncer", "background_remover"})
# Whole-frame buffers the work on frames needs beside the queues: an image is read, copied, pasted into and
# written; a video's frames are also converted for the encoder and tiled for the detector while the next ones are
# analysed (measured at 720p).
IMAGE_WORKING_FRAMES = 4
VIDEO_WORKING_FRAMES = 20
# What FFmpeg's decoder and encoder hold, in decoded frames: reference frames, x264's lookahead and frames per
# codec thread (measured at 720p on 2 cores: about 105 MB, 40 frames of 2.6 MB, with FFmpeg's thread counts;
# 26 frames with one thread each, what a tight budget asks for).
CODEC_FRAMES = 40
SINGLE_THREAD_CODEC_FRAMES = 26
# Under a budget the codecs get the thread count CODEC_FRAMES was measured with: FFmpeg's own choice grows with
# the machine's cores, and so would their memory.
CODEC_THREADS = 2
# The plan fills this share of the budget: the estimate is a model, and RSS moves with allocator and thread
# timing (runs of the same 720p job peak within about 20 MB of each other).
PLANNED_SHARE = 0.92
# The frame enhancer's tiles are halved under a tight budget down to this side (its activations go with the area).
SMALLEST_TILE = 64
CONSTANTS_SLACK = 8 * MB
"""Room in a pool budget for the constants read from model files beside their sessions (inswapper's 1 MB emap):
without it, a strict level's pool evicted and reloaded its models every chunk."""


@dataclass(frozen=True)
class ModelNeed:
    name: str
    kind: str
    weight_bytes: int
    """What the pool counts for it: the file's size."""
    item_bytes: int
    """Activation bytes per batch item."""
    tile: int | None = None
    """The side of the tiles it runs on (the frame enhancer), which the plan may halve."""
    load_bytes: int = 0
    """What loading it holds for a moment beside its weights: ONNX Runtime (and dlib) parse the whole file before
    they make the model's own copy of the weights."""

    @property
    def batched(self) -> bool:
        return self.kind in BATCHED_KINDS

    def activation(self, batch: int, tile_divisor: int = 1) -> int:
        items = batch if self.batched else 1
        return self.item_bytes * items // (tile_divisor * tile_divisor if self.tile else 1)


def model_need(spec: ModelSpec, file_bytes: int, input_size: int | None = None) -> ModelNeed:
    """The estimate for one model; `input_size` fills its input's free spatial axes (a frame enhancer's tile)."""
    load = file_bytes  # ONNX Runtime and dlib both parse the whole file before they build the model from it
    if spec.io is None or not spec.io.inputs:
        return ModelNeed(spec.name, spec.kind, file_bytes, int(file_bytes * UNDESCRIBED_ACTIVATION), load_bytes=load)
    side = input_size or spec.io.crop_size or 1
    largest = max(prod(1 if isinstance(axis, str) and index == 0 else side if isinstance(axis, str) else axis
                       for index, axis in enumerate(tensor.shape)) for tensor in spec.io.inputs)
    return ModelNeed(spec.name, spec.kind, file_bytes, int(4 * largest * ACTIVATION_FACTOR.get(spec.kind, 64.0)),
                     tile=input_size if spec.kind == "frame_enhancer" else None, load_bytes=load)


@dataclass(frozen=True)
class MemoryPlan:
    budget_bytes: int | None
    """None: no budget; nothing is limited."""
    device: Device
    baseline_bytes: int
    """The process's RSS before the run (counted on the CPU only)."""
    models: tuple[ModelNeed, ...]
    pool_budget_bytes: int | None
    """The pool's byte budget (None: unlimited)."""
    all_resident: bool
    """Every model stays loaded together; False: the pool evicts and reloads within its budget."""
    batch_size: int
    """Most items per model call of the batched models (swappers, enhancers)."""
    queue_frames: int
    """Frames each video queue holds."""
    render_workers: int
    """Frames rendered at once (each with its own activations)."""
    frame_bytes: int
    estimated_peak_bytes: int
    minimum_budget_bytes: int
    """The smallest budget this job fits in (batch 1, one frame queued, the analysis models and the largest other one)."""
    codec_threads: int = 0
    """Threads of the video decoder and encoder: 0 lets FFmpeg choose (no budget), CODEC_THREADS under a budget,
    1 when the budget is tight."""
    tile_divisor: int = 1
    """The frame enhancer's tiles are this many times smaller than asked for (a tight budget)."""

    def frame_tile(self, asked: int) -> int:
        return asked // self.tile_divisor

    @property
    def refine_within_bytes(self) -> int | None:
        """The RSS the first batches must stay under, or None: on the CPU under a budget, the planned share of it
        (device memory cannot be read per batch the same way)."""
        if self.budget_bytes is None or self.device != "cpu":
            return None
        return int(self.budget_bytes * PLANNED_SHARE)

    def batch_sizes(self) -> dict[str, int]:
        return {need.name: self.batch_size for need in self.models if need.batched}

    def to_dict(self) -> dict[str, Any]:
        """For the run report."""
        return {
            "budget_mb": None if self.budget_bytes is None else round(self.budget_bytes / MB, 1),
            "device": self.device, "baseline_rss_mb": round(self.baseline_bytes / MB, 1),
            "pool_budget_mb": None if self.pool_budget_bytes is None else round(self.pool_budget_bytes / MB, 1),
            "all_resident": self.all_resident, "batch_sizes": self.batch_sizes(), "queue_frames": self.queue_frames,
            "render_workers": self.render_workers, "frame_mb": round(self.frame_bytes / MB, 2),
            "estimated_peak_mb": round(self.estimated_peak_bytes / MB, 1),
            "minimum_budget_mb": round(self.minimum_budget_bytes / MB, 1), "codec_threads": self.codec_threads,
            "tile_divisor": self.tile_divisor,
            "models": [{"name": need.name, "kind": need.kind, "weights_mb": round(need.weight_bytes / MB, 1),
                        "activation_mb_per_item": round(need.item_bytes / MB, 1)} for need in self.models],
        }


@dataclass(frozen=True)
class _Setting:
    """What the plan can give up, at one step."""

    batch: int
    tile_divisor: int
    threaded: bool
    """The video codecs keep CODEC_THREADS threads each (else one)."""
    queue: int
    workers: int
    """Frames rendered at once, each with its own activations and working copies."""


def plan_memory(models: Sequence[ModelNeed], budget_bytes: int | None, baseline_bytes: int, device: Device,
                frame_bytes: int, max_batch: int, queue_frames: int, render_workers: int,
                one_generator: bool = False, chunked: bool = False) -> MemoryPlan:
    """The plan for `models` under `budget_bytes`. queue_frames: the video's queue length (0 for an image);
    frame_bytes: one decoded frame (0 when not budgeted); one_generator: the generators take turns (a strict
    memory level), so only the largest counts; chunked: a chunk of `queue_frames` frames is held between the two
    queues. Raises MemoryBudgetError when the job cannot fit."""
    host = device == "cpu"
    video = queue_frames > 0
    baseline = baseline_bytes if host else 0
    total = sum(need.weight_bytes for need in models)
    loading = max((need.load_bytes for need in models), default=0)  # one model loads at a time
    weights = total + loading
    generators = [need.weight_bytes for need in models if need.kind in GENERATOR_KINDS]
    take_turns = one_generator and len(generators) > 1  # a generator alone has nothing to take turns with
    if take_turns:
        weights -= sum(generators) - max(generators, default=0)
    # The analysis models (detectors, landmarkers, the recognizer) stay with the analyser for the whole run,
    # whatever the pool's turns: the smallest budget holds them all, the largest generator and one load.
    least_weights = (sum(need.weight_bytes for need in models if need.kind not in GENERATOR_KINDS)
                     + max(generators, default=0) + loading)
    tiles = [need.tile for need in models if need.tile]

    def frames(setting: _Setting) -> int:  # the queues, a chunk, the codecs, the frames being worked on
        codec = (CODEC_FRAMES if setting.threaded else SINGLE_THREAD_CODEC_FRAMES) if video else 0
        working = VIDEO_WORKING_FRAMES if video else IMAGE_WORKING_FRAMES
        held = (3 if chunked else 2) * setting.queue + codec + setting.workers + working
        return frame_bytes * held if host else 0

    def activations(setting: _Setting) -> int:  # every render worker may run the hungriest model at once
        return setting.workers * max((need.activation(setting.batch, setting.tile_divisor) for need in models),
                                     default=0)

    def concede(setting: _Setting) -> _Setting | None:
        if setting.batch > 1:
            return replace(setting, batch=setting.batch // 2)
        if tiles and min(tiles) // (setting.tile_divisor * 2) >= SMALLEST_TILE:
            return replace(setting, tile_divisor=setting.tile_divisor * 2)
        if setting.threaded and video and host:
            return replace(setting, threaded=False)
        if setting.queue > min(queue_frames, 1):
            return replace(setting, queue=setting.queue // 2)
        if setting.workers > 1:
            return replace(setting, workers=1)
        return None

    def plan(setting: _Setting, pool: int | None, peak: int) -> MemoryPlan:
        threads = (0 if budget_bytes is None or not host else CODEC_THREADS) if setting.threaded else 1
        return MemoryPlan(budget_bytes, device, baseline_bytes, tuple(models), pool, pool is None or pool >= total,
                          setting.batch, setting.queue, setting.workers, frame_bytes, peak, minimum, threads,
                          setting.tile_divisor)

    setting = _Setting(max_batch, 1, True, queue_frames, render_workers)
    least = setting
    while (smaller := concede(least)) is not None:
        least = smaller
    minimum = int((baseline + frames(least) + activations(least) + least_weights) / PLANNED_SHARE)
    if budget_bytes is None:
        return plan(setting, weights - loading + CONSTANTS_SLACK if take_turns else None,
                    baseline + frames(setting) + activations(setting) + weights)
    if budget_bytes < minimum:
        raise MemoryBudgetError(detail=(
            f"--memory-budget {budget_bytes / MB:g} MB is too small for this job: it needs at least "
            f"{-(-minimum // MB)} MB ({'process RSS' if host else 'device memory'}: "
            f"{baseline / MB:.0f} MB already in use, {least_weights / MB:.0f} MB for the models it holds at once (the "
            f"analysis models, the largest other one and a load), the rest for its activations, the frames and a "
            f"margin of {1 - PLANNED_SHARE:.0%})"))
    room = int(budget_bytes * PLANNED_SHARE)
    while True:
        need = baseline + frames(setting) + activations(setting) + weights
        if need <= room:
            return plan(setting, room - need + weights - loading, need)
        smaller = concede(setting)
        if smaller is None:  # models take turns in the room that is left (at least the largest one, checked above)
            return plan(setting, room - baseline - frames(setting) - activations(setting) - loading, room)
        setting = smaller

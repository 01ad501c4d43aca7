"""RunPlan: what a run decides from its config, its chain and the machine, before any work: the memory plan under
--memory-budget (slimfuse.memory.plan), the level's caps on face and tile sizes, the reduced-precision variants a
level picks (and those it would pick that are not made yet), the models kept on the CPU, and ONNX Runtime's
settings. Planning only computes: it reads model files' sizes and variants' records, and never makes, gates,
loads or fetches anything."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from slimfuse.config import RunConfig
from slimfuse.media.destination import is_video
from slimfuse.memory.levels import MemoryLevel
from slimfuse.memory.plan import GENERATOR_KINDS, Device, MemoryPlan, ModelNeed, model_need, plan_memory
from slimfuse.memory.probe import process_memory
from slimfuse.models.runtime import SessionSettings
from slimfuse.models.store import Store
from slimfuse.models.spec import KIND_GATES
from slimfuse.models.variants import FLAGS, PASS, UNGATED, read_record, variant_filename

# The reduced-precision variants a memory level may pick, best first: fp16 halves the weights and runs fast on
# GPUs; on the CPU int8 quarters them (static, calibrated on faces, before dynamic).
GPU_VARIANTS = ("fp16",)
CPU_VARIANTS = ("int8", "int8-dynamic")
MIN_VARIANT_BYTES = 32 << 20
"""Smaller models save little memory as variants, and a gate costs minutes."""


@dataclass(frozen=True)
class VariantWork:
    """Variants the run's options ask for that are not ready: made and gated only where the user or the operator
    asks for it (`slimfuse optimize`, or `slimfuse swap` before its work, with a line saying so), never by
    planning or from an HTTP request. Until then the run loads the originals in their place."""

    to_make: tuple[str, ...] = ()
    """Large models the memory level wants a reduced-precision variant of, none tried yet."""
    techniques: tuple[str, ...] = ()
    """The variants tried for each of `to_make`, best first (the first that passes its gate is kept)."""
    to_gate: tuple[str, ...] = ()
    """NAME.VARIANT chosen by a model option but stored without its quality gate."""

    @property
    def pending(self) -> bool:
        return bool(self.to_make or self.to_gate)

    def commands(self) -> list[str]:
        """The commands that do the work, one per model."""
        return ([f"slimfuse optimize {name} {FLAGS[self.techniques[0]]} --gate" for name in self.to_make]
                + [f"slimfuse optimize {name.rpartition('.')[0]} {FLAGS[name.rpartition('.')[2]]} --gate"
                   for name in self.to_gate])


@dataclass(frozen=True)
class RunPlan:
    models: tuple[str, ...]
    """Every catalog model the run loads (analysis and chain), in first-use order."""
    memory: MemoryPlan
    variants: tuple[tuple[str, str], ...]
    """(catalog name, NAME.VARIANT) the pool loads in those models' place: chosen ones and the level's."""
    cpu_only: tuple[str, ...]
    """Models that run on the CPU whatever the provider (the light analysis models, at a level that says so)."""
    generators: tuple[str, ...]
    """The swappers and enhancers among `models` (the ones a memory level makes take turns)."""
    generator_threads: int | None
    """The generators' intra-op threads where they differ from `runtime`'s (0: one per core), else None."""
    face_size: int
    """--target-face-size with the level's cap."""
    pixel_boost: int | None
    frame_tile: int
    """The frame enhancer's tile: the option, the level's cap and the budget's halving."""
    runtime: SessionSettings
    variant_work: VariantWork = VariantWork()

    def to_dict(self) -> dict[str, Any]:
        return {"variants": dict(self.variants), "cpu_only": list(self.cpu_only), "face_size": self.face_size,
                "generator_threads": self.generator_threads,
                "pixel_boost": self.pixel_boost, "frame_tile": self.frame_tile, **self.memory.to_dict()}


def plan_run(config: RunConfig, models: tuple[str, ...], store: Store, target: Path | None = None) -> RunPlan:
    """The run's plan for `models`; `target` (a path, when known before the run) sizes the frames in flight and
    tells images from videos (None: planned as a video of unknown size). Raises MemoryBudgetError when the job
    cannot fit its --memory-budget."""
    level = config.memory.level
    variants = dict(config.model_variants)
    work = VariantWork(to_gate=tuple(name for name in variants.values() if _ungated(store, name)))
    if level.reduced_precision:
        techniques = GPU_VARIANTS if config.runtime.on_gpu else CPU_VARIANTS
        work = replace(work, to_make=tuple(untried(store, [name for name in models if name not in variants],
                                                   techniques)), techniques=techniques)
        variants = _reduced_precision_variants(variants, models, store, config.runtime.on_gpu)
    video = target is not None and is_video(target)
    # An unknown target (a Python API caller's next call) is planned for as a video: frames in flight counted.
    streaming = target is None or video
    face_cap, tile_cap = level.max_face_size, level.max_frame_tile
    tile = config.enhance.frame_enhancer_tile_size
    tile = tile if tile_cap is None else min(tile, tile_cap)
    memory = _memory_plan(config, models, variants, store, target, streaming, tile)
    boost = config.swap.face_swapper_pixel_boost
    return RunPlan(
        models=models, memory=memory, variants=tuple(sorted(variants.items())),
        cpu_only=_cpu_only(config, models, store),
        generators=tuple(name for name in models if store.catalog.get(name).kind in GENERATOR_KINDS),
        generator_threads=_generator_threads(config, level, video),
        face_size=config.swap.target_face_size if face_cap is None else min(config.swap.target_face_size, face_cap),
        pixel_boost=boost if face_cap is None or boost is None else min(boost, face_cap),
        frame_tile=memory.frame_tile(tile), runtime=_runtime_options(config, level, video), variant_work=work)


def _runtime_options(config: RunConfig, level: MemoryLevel, video: bool) -> SessionSettings:
    """ONNX Runtime's settings. One thread per model for a video: its decoder, encoder, analysis and rendering
    threads already keep the cores busy, and models taking every core fight them (about 1.5x slower on 2 cores);
    an image gets every core (0 lets ONNX Runtime choose). Without --execution-gpu-memory-limit, a --memory-budget
    on a GPU provider caps the device arena."""
    runtime = config.runtime
    threads = runtime.execution_thread_count
    if threads == 0 and video:
        threads = 1
    gpu_limit = runtime.execution_gpu_memory_limit
    if gpu_limit is None and runtime.on_gpu:
        gpu_limit = config.memory.budget_bytes
    return SessionSettings(
        providers=runtime.execution_providers, device_id=runtime.execution_device_id,
        strict_provider=runtime.strict_provider, intra_op_threads=threads, gpu_mem_limit=gpu_limit,
        enable_cpu_arena=level.cpu_arena, enable_mem_pattern=level.memory_patterns, shrink_arenas=level.shrink_arenas,
        arena_extend_strategy=runtime.execution_arena_extend_strategy,
        cudnn_conv_algo_search=runtime.execution_cudnn_conv_algo_search,
        tensorrt_fp16=runtime.execution_tensorrt_fp16, tensorrt_cache_dir=runtime.execution_tensorrt_cache_dir)


def _generator_threads(config: RunConfig, level: MemoryLevel, video: bool) -> int | None:
    """Every core for the generators of a video at a chunked level: there each processor runs over a chunk while
    nothing else of the frame path does (analysis waits for the next chunk, one render thread), so a generator on
    one thread would leave the other cores idle. The analysis models stay on one: on every core, threads cost
    those small models more than they gain. None where the run's own setting applies."""
    if not video or not level.chunked or config.runtime.execution_thread_count != 0:
        return None
    return 0


def _memory_plan(config: RunConfig, models: tuple[str, ...], variants: dict[str, str], store: Store,
                 target: Path | None, video: bool, tile: int) -> MemoryPlan:
    needs: list[ModelNeed] = []
    for name in models:
        size = {config.enhance.frame_enhancer_model: tile,
                config.frame_colorizer.frame_colorizer_model: config.frame_colorizer.side}.get(name)
        needs.append(model_need(store.catalog.get(name), _file_bytes(store, name, variants), size))
    device: Device = "gpu" if config.runtime.on_gpu else "cpu"
    budget = config.memory.budget_bytes
    level = config.memory.level
    baseline = process_memory().rss_bytes  # before the target's header is read: the run's own baseline
    frame = _frame_bytes(target, video) if budget is not None and device == "cpu" and target is not None else 0
    return plan_memory(needs, budget, baseline, device, frame, level.max_batch,
                       level.queue_frames if video else 0, level.render_workers if video and not level.chunked else 1,
                       one_generator=level.one_generator, chunked=video and level.chunked)


def _file_bytes(store: Store, name: str, variants: dict[str, str]) -> int:
    """The model's file size without verifying or fetching it (the run does that when it loads the model)."""
    chosen = variants.get(name, name)
    path = store.variant_location(chosen) if chosen != name else store.location(name)
    if path.is_file():
        return path.stat().st_size
    return store.catalog.get(name).size or 0


def _frame_bytes(target: Path, video: bool) -> int:
    """One decoded RGB frame of the target (read from its header)."""
    if video:
        from slimfuse.media.video_probe import probe

        info = probe(target)
        return info.width * info.height * 3
    from PIL import Image

    try:
        with Image.open(target) as image:
            width, height = image.size
    except OSError:  # missing, unreadable or not an image: the run says so with its own error and exit code
        return 0
    return width * height * 3


def _reduced_precision_variants(chosen: dict[str, str], models: tuple[str, ...], store: Store,
                                on_gpu: bool) -> dict[str, str]:
    """`chosen` plus, for each other model, its stored variant that passed its gate and was made from the file
    the store holds now. The store checks each file's sha256 again when the pool loads it."""
    picked = dict(chosen)
    for name in models:
        if name in picked:
            continue
        spec = store.catalog.get(name)
        original = spec.sha256 or store.recorded(name)
        for variant in GPU_VARIANTS if on_gpu else CPU_VARIANTS:
            record = read_record(store.model_dir / variant_filename(spec.filename, variant))
            if record is not None and record.verdict == PASS and record.original_sha256 == original:
                picked[name] = f"{name}.{variant}"
                break
    return picked


def untried(store: Store, models: Sequence[str], techniques: Sequence[str]) -> list[str]:
    """The large models of `models` with a file, a gate for their kind, and no variant of `techniques` tried
    (smaller ones save little memory as variants, and a gate costs minutes)."""
    found = []
    for name in models:
        spec = store.catalog.get(name)
        path = store.location(name)
        if (spec.kind not in KIND_GATES or not spec.filename.endswith(".onnx") or not path.is_file()
                or path.stat().st_size < MIN_VARIANT_BYTES):
            continue
        if all(read_record(store.model_dir / variant_filename(spec.filename, technique)) is None
               for technique in techniques):
            found.append(name)
    return found


def _ungated(store: Store, name: str) -> bool:
    """Whether stored variant `name` (NAME.VARIANT) waits for its quality gate."""
    record = read_record(store.variant_location(name))
    return record is not None and record.verdict == UNGATED


def _cpu_only(config: RunConfig, models: tuple[str, ...], store: Store) -> tuple[str, ...]:
    """At a level that says so, the light analysis models (detectors, landmarkers, recognizers, masks) stay on the
    CPU whatever the provider, so the device holds only the generators."""
    if not (config.runtime.on_gpu and config.memory.level.analysis_on_cpu):
        return ()
    return tuple(name for name in models if store.catalog.get(name).kind not in GENERATOR_KINDS)

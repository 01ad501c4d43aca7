"""The models a run will load, and its MemoryPlan (slimfuse.memory.plan) from the run's options, before any work."""
from __future__ import annotations

from pathlib import Path

from slimfuse.config import RunConfig
from slimfuse.faces.analyse import MESH_MODEL
from slimfuse.faces.detect import BLAZEFACE_MODELS, SPECS, FaceDetector
from slimfuse.faces.recognize import recognizer_models
from slimfuse.media.video_probe import probe
from slimfuse.memory.plan import GENERATOR_KINDS, Device, MemoryPlan, ModelNeed, model_need, plan_memory
from slimfuse.memory.probe import process_memory
from slimfuse.models.store import Store
from slimfuse.models.variants import PASS, variant_filename, read_record


def run_models(config: RunConfig, store: Store) -> tuple[str, ...]:
    """Every catalog model the run's options call for (each once, in first-use order)."""
    names: list[str] = []
    detector = config.face_detector_model
    if detector in BLAZEFACE_MODELS:
        names += [SPECS[key].model for key in FaceDetector.models_for(detector)]
    else:
        names.append(detector)
    names.append(MESH_MODEL)
    names += recognizer_models(config.face_recognizer_model)
    for model in (config.face_swapper_model, config.face_enhancer_model):
        if model not in ("mesh", "none"):
            io = store.catalog.get(model).io
            names += [model, *(io.companions if io is not None else ())]
    if config.face_swapper_model != "mesh" or config.face_enhancer_model != "none":  # the neural masks
        if "occlusion" in config.face_mask_types:
            names.append(config.face_occluder_model)
        if "region" in config.face_mask_types:
            names.append(config.face_parser_model)
    if config.frame_enhancer_model != "none":
        names.append(config.frame_enhancer_model)
    return tuple(dict.fromkeys(names))


def file_bytes(store: Store, name: str, variants: dict[str, str]) -> int:
    """The model's file size without verifying or fetching it (the run does that when it loads the model)."""
    chosen = variants.get(name, name)
    path = store.variant_location(chosen) if chosen != name else store.location(name)
    if path.is_file():
        return path.stat().st_size
    return store.catalog.get(name).size or 0


def frame_bytes(target: Path, is_video: bool) -> int:
    """One decoded RGB frame of the target (read from its header)."""
    if is_video:
        info = probe(target)
        return info.width * info.height * 3
    from PIL import Image

    try:
        with Image.open(target) as image:
            width, height = image.size
    except OSError:  # missing, unreadable or not an image: the pipeline says so with its own error and exit code
        return 0
    return width * height * 3


def plan_run(config: RunConfig, store: Store) -> MemoryPlan:
    """The run's plan under --memory-budget (raises MemoryBudgetError when it cannot fit)."""
    variants = dict(config.model_variants)
    needs: list[ModelNeed] = []
    for name in run_models(config, store):
        size = config.frame_enhancer_tile_size if name == config.frame_enhancer_model else None
        needs.append(model_need(store.catalog.get(name), file_bytes(store, name, variants), size))
    device: Device = "gpu" if config.on_gpu else "cpu"
    budgeted = config.memory_budget_bytes is not None and device == "cpu"
    level = config.memory_level
    video = config.is_video
    return plan_memory(needs, config.memory_budget_bytes, process_memory().rss_bytes, device,
                       frame_bytes(config.target, video) if budgeted else 0, level.max_batch,
                       level.queue_frames if video else 0, level.render_workers if video and not level.chunked else 1,
                       one_generator=level.one_generator, chunked=video and level.chunked)


# The reduced-precision variants a memory level may pick, best first: fp16 halves the weights and runs fast on
# GPUs; on the CPU int8 quarters them (static, calibrated on faces, before dynamic).
GPU_VARIANTS = ("fp16",)
CPU_VARIANTS = ("int8", "int8-dynamic")


def reduced_precision_variants(config: RunConfig, store: Store) -> tuple[tuple[str, str], ...]:
    """(catalog name, NAME.VARIANT) for each model of the run that has a stored variant which passed its gate and
    was made from the file the store holds now; the variants the options chose already are kept. The store checks
    each file's sha256 again when the pool loads it."""
    chosen = dict(config.model_variants)
    for name in run_models(config, store):
        if name in chosen:
            continue
        spec = store.catalog.get(name)
        original = spec.sha256 or store.recorded(name)
        for variant in GPU_VARIANTS if config.on_gpu else CPU_VARIANTS:
            record = read_record(store.model_dir / variant_filename(spec.filename, variant))
            if record is not None and record.verdict == PASS and record.original_sha256 == original:
                chosen[name] = f"{name}.{variant}"
                break
    return tuple(sorted(chosen.items()))


def cpu_only_models(config: RunConfig, store: Store) -> tuple[str, ...]:
    """The models the run keeps on the CPU whatever the provider: at a level that says so, the light analysis
    models (detectors, landmarkers, recognisers, masks), so the device holds only the generators."""
    if not (config.on_gpu and config.memory_level.analysis_on_cpu):
        return ()
    return tuple(name for name in run_models(config, store) if store.catalog.get(name).kind not in GENERATOR_KINDS)

"""The models a run will load, and its MemoryPlan (slimfuse.memory.plan) from the run's options, before any work."""
from __future__ import annotations

from pathlib import Path

from slimfuse.config import RunConfig
from slimfuse.faces.analyse import MESH_MODEL
from slimfuse.faces.detect import BLAZEFACE_MODELS, SPECS, FaceDetector
from slimfuse.faces.recognize import recognizer_models
from slimfuse.media.video_io import probe
from slimfuse.memory.plan import Device, MemoryPlan, ModelNeed, model_need, plan_memory
from slimfuse.memory.probe import process_memory
from slimfuse.models.store import Store
from slimfuse.models.tensors import MAX_BATCH
from slimfuse.pipeline.video import QUEUE_FRAMES, RENDER_WORKERS


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
    device: Device = "cpu" if all(p == "cpu" for p in config.execution_providers) else "gpu"
    budgeted = config.memory_budget_bytes is not None and device == "cpu"
    return plan_memory(needs, config.memory_budget_bytes, process_memory().rss_bytes, device,
                       frame_bytes(config.target, config.is_video) if budgeted else 0, MAX_BATCH,
                       QUEUE_FRAMES if config.is_video else 0, RENDER_WORKERS if config.is_video else 1)

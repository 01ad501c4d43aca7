"""The memory plan: what it gives up, in order, as the budget shrinks, and the refusal of a budget the job cannot
fit in (before any work, with the smallest budget that works), from the command line too."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from slimfuse.cli.main import main
from slimfuse.config import RunConfig
from slimfuse.errors import MemoryBudgetError
from slimfuse.memory.plan import MB, PLANNED_SHARE, MemoryPlan, ModelNeed, model_need, plan_memory
from slimfuse.models.catalog import Catalog
from slimfuse.models.store import Store
from slimfuse.memory.probe import ProcessMemory
from slimfuse.pipeline import plan as pipeline_plan
from slimfuse.pipeline.chain import ChainSpec
from slimfuse.pipeline.run import run_models

MODELS = (ModelNeed("detector", "detector", 2 * MB, 2 * MB), ModelNeed("swapper", "swapper", 100 * MB, 10 * MB),
          ModelNeed("enhancer", "enhancer", 300 * MB, 20 * MB))
FRAME = 3 * MB


def plan(budget_mb: float | None, queue: int = 8, workers: int = 2) -> MemoryPlan:
    budget = None if budget_mb is None else int(budget_mb * MB)
    return plan_memory(MODELS, budget, 100 * MB, "cpu", FRAME, 8, queue, workers)


def test_without_a_budget_nothing_is_limited() -> None:
    free = plan(None)
    assert free.pool_budget_bytes is None and free.all_resident and free.batch_size == 8 and free.queue_frames == 8
    # baseline + frames (2 queues of 8, 40 in the codecs, 2 rendering, 20 working) + two workers' widest
    # activations + every weight
    assert free.estimated_peak_bytes == (100 + 3 * 78 + 2 * 160 + 402) * MB and free.codec_threads == 0
    assert free.batch_sizes() == {"swapper": 8, "enhancer": 8}


def test_batches_shrink_first_then_codec_threads_then_queues_then_workers_then_residency() -> None:
    roomy = plan(2000)
    assert (roomy.batch_size, roomy.codec_threads, roomy.queue_frames, roomy.all_resident) == (8, 2, 8, True)
    assert roomy.pool_budget_bytes is not None and roomy.pool_budget_bytes >= 402 * MB
    halved = plan(900)
    assert (halved.batch_size, halved.codec_threads, halved.queue_frames, halved.all_resident) == (2, 2, 8, True)
    single = plan(810)
    assert (single.batch_size, single.codec_threads, single.queue_frames, single.all_resident) == (1, 1, 8, True)
    queues = plan(770)
    assert (queues.batch_size, queues.codec_threads, queues.queue_frames, queues.all_resident) == (1, 1, 2, True)
    one_worker = plan(740)
    assert (one_worker.queue_frames, one_worker.render_workers, one_worker.all_resident) == (1, 1, True)
    turns = plan(700)
    assert (turns.batch_size, turns.queue_frames, turns.render_workers, turns.all_resident) == (1, 1, 1, False)
    assert turns.pool_budget_bytes is not None and 300 * MB <= turns.pool_budget_bytes < 402 * MB
    for each in (roomy, halved, single, queues, one_worker, turns):  # with the margin left free
        assert each.estimated_peak_bytes <= each.budget_bytes * PLANNED_SHARE  # type: ignore[operator]


def test_an_impossible_budget_is_refused_with_the_smallest_that_works() -> None:
    with pytest.raises(MemoryBudgetError, match="needs at least 619 MB") as refused:
        plan(600)
    assert refused.value.exit_code == 41
    # what the message said is enough: the detector (held throughout) and the largest model, one frame queued, batch 1
    smallest = plan(619)
    assert smallest.minimum_budget_bytes <= 619 * MB
    assert smallest.pool_budget_bytes is not None and 302 * MB <= smallest.pool_budget_bytes <= 305 * MB


def test_on_a_gpu_the_budget_counts_models_and_activations_only() -> None:
    gpu = plan_memory(MODELS, 560 * MB, 100 * MB, "gpu", FRAME, 8, 8, 2)
    assert gpu.queue_frames == 8 and gpu.all_resident and gpu.batch_size == 2 and gpu.codec_threads == 0


def test_activations_follow_the_models_input() -> None:
    catalog = Catalog()
    swapper = model_need(catalog.get("inswapper_128"), 500 * MB)
    assert swapper.weight_bytes == 500 * MB and swapper.item_bytes == 4 * 3 * 128 * 128 * 256
    assert swapper.activation(4) == 4 * swapper.item_bytes
    tiles = model_need(catalog.get("real_esrgan_x2"), 60 * MB, 128)
    assert tiles.item_bytes == 4 * 3 * 128 * 128 * 256 and tiles.activation(8) == tiles.item_bytes  # one tile a call


def test_the_swap_refuses_a_budget_before_any_work(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   astronaut_path: Path, grace_hopper_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The plan's baseline is the process's RSS when the run starts: here the test process's, which is whatever the
    # tests before left and may grow between the two runs. A fixed one makes the stated minimum exactly enough.
    baseline = 400 * MB
    monkeypatch.setattr(pipeline_plan, "process_memory", lambda: ProcessMemory(baseline, baseline, baseline))
    output, report = tmp_path / "out.jpg", tmp_path / "run.json"
    args = ["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(output), "--report",
            str(report)]
    assert main([*args, "--memory-budget", "1"]) == 41
    error = capsys.readouterr().err
    assert "--memory-budget 1 MB is too small for this job: it needs at least" in error and not output.exists()
    assert "400 MB already in use" in error  # the fixed baseline is the one planned with
    written = json.loads(report.read_text())
    assert written["error"]["exit_code"] == 41 and written["pool"] is None and written["stages"] == []
    smallest = int(error.split("needs at least ")[1].split(" MB")[0])
    assert main([*args, "--memory-budget", str(smallest)]) == 0 and output.exists()  # the stated minimum runs
    planned = json.loads(report.read_text())
    # the mesh swap's models are all analysis models, which the smallest budget holds at once
    assert planned["memory_plan"]["budget_mb"] == smallest and planned["memory_plan"]["all_resident"]
    assert planned["pool"]["budget_bytes"] / MB == pytest.approx(planned["memory_plan"]["pool_budget_mb"], abs=0.1)


def test_the_run_models_follow_the_options(store: Store) -> None:
    config = RunConfig.from_options(face_detector_model="short", face_swapper_model="simswap_256",
                                    face_enhancer_model="gfpgan_1.4", face_mask_types=("box", "occlusion"),
                                    frame_enhancer_model="real_esrgan_x2")
    assert run_models(config, ChainSpec.of(config), store.catalog) == (
        "face_detection_short_range", "face_landmark", "dlib_shape_predictor_5", "dlib_face_recognition_resnet",
        "simswap_256", "arcface_w600k_r50", "crossface_simswap", "xseg_1", "gfpgan_1.4", "real_esrgan_x2")


def test_a_missing_target_keeps_its_own_error_under_a_budget(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             astronaut_path: Path) -> None:
    assert main(["swap", "-s", str(astronaut_path), "-t", str(tmp_path / "absent.jpg"), "-o",
                 str(tmp_path / "out.jpg"), "--memory-budget", "100000"]) == 3


def test_the_frame_enhancers_tiles_shrink_after_the_batches() -> None:
    upscaler = ModelNeed("real_esrgan_x2", "frame_enhancer", 60 * MB, 160 * MB, tile=256)
    models = (*MODELS, upscaler)
    roomy = plan_memory(models, None, 100 * MB, "gpu", FRAME, 8, 0, 1)
    assert roomy.tile_divisor == 1 and roomy.frame_tile(256) == 256
    tight = plan_memory(models, 600 * MB, 100 * MB, "gpu", FRAME, 8, 0, 1)  # 462 MB of weights, 160 of tile
    assert tight.batch_size == 1 and tight.tile_divisor == 2 and tight.frame_tile(256) == 128
    assert tight.estimated_peak_bytes == 462 * MB + 40 * MB  # a quarter of the tile's activations
    smallest = plan_memory(models, 520 * MB, 100 * MB, "gpu", FRAME, 8, 0, 1)
    assert smallest.frame_tile(256) == 64  # SMALLEST_TILE: halved no further

"""--video-memory-level: what each level changes in the run (through the real command line and its run report),
and that levels 0-2 give the same frames."""
from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import av
import numpy as np
import pytest

import neural_models as nm
from slimfuse.bench.clips import make_clip, pan
from slimfuse.cli.main import build_parser, main
from slimfuse.cli.options import config_from_args
from slimfuse.config import RunConfig
from slimfuse.errors import UsageError
from slimfuse.memory.levels import LEVELS
from slimfuse.memory.plan import CONSTANTS_SLACK, MB, ModelNeed, plan_memory
from slimfuse.models.store import Store, sha256_file
from slimfuse.models.variants import PASS, UNGATED, VariantRecord, now
from slimfuse.pipeline.chain import ChainSpec
from slimfuse.pipeline.plan import RunPlan, plan_run
from slimfuse.pipeline.run import run_models

SWAPPER, RECOGNIZER, ENHANCER = "inswapper_128", "arcface_w600k_r50", "gfpgan_1.4"
NEURAL = ("--face-swapper-model", SWAPPER, "--face-enhancer-model", ENHANCER)


def _config(*options: str) -> tuple[RunConfig, argparse.Namespace]:
    args = build_parser().parse_args(["swap", "-s", "a.jpg", "-t", "b.mp4", "-o", "c.mp4", *options])
    return config_from_args(args), args


def _plan(store: Store, *options: str, target: Path | None = None) -> RunPlan:
    config = _config(*options)[0]
    return plan_run(config, run_models(config, ChainSpec.of(config), store.catalog), store, target)


def test_strategies_name_levels_and_profiles_set_them_under_explicit_options() -> None:
    assert _config()[0].memory.video_memory_level == 1
    assert _config("--video-memory-strategy", "strict")[0].memory.video_memory_level == 2
    assert _config("--video-memory-strategy", "tolerant")[0].memory.video_memory_level == 0
    assert _config("--profile", "jetson")[0].memory.video_memory_level == 2
    assert _config("--profile", "jetson", "--video-memory-level", "0")[0].memory.video_memory_level == 0
    with pytest.raises(UsageError, match="--video-memory-strategy: not allowed with argument --video-memory-level"):
        _config("--video-memory-level", "2", "--video-memory-strategy", "strict")
    with pytest.raises(UsageError, match="--video-memory-level: invalid choice: 4"):
        _config("--video-memory-level", "4")


def test_level_3_caps_faces_and_tiles_and_each_level_sets_the_runtime(store: Store) -> None:
    capped = _plan(store, "--video-memory-level", "3", "--target-face-size", "1024", "--face-swapper-pixel-boost",
                   "768", "--frame-enhancer-tile-size", "384")
    assert (capped.face_size, capped.pixel_boost, capped.frame_tile) == (512, 512, 128)
    kept = _plan(store, "--video-memory-level", "2", "--target-face-size", "1024")
    assert kept.face_size == 1024
    arenas = [_plan(store, "--video-memory-level", str(level)).runtime for level in LEVELS]
    assert [(r.enable_cpu_arena, r.shrink_arenas, r.enable_mem_pattern) for r in arenas] == [
        (True, False, True), (True, True, True), (False, True, False), (False, True, False)]


def test_chunked_levels_give_a_video_s_generators_every_core_and_the_analysis_one(store: Store) -> None:
    # At a chunked level a generator runs over a chunk while nothing else of the frame path does.
    video = Path("b.mp4")  # not read: the plan only tells a video by its name here
    assert [_plan(store, *NEURAL, "--video-memory-level", str(level), target=video).generator_threads
            for level in LEVELS] == [0, None, 0, 0]
    plan = _plan(store, *NEURAL, "--video-memory-level", "2", target=video)
    assert plan.runtime.intra_op_threads == 1 and set(plan.generators) == {SWAPPER, ENHANCER}
    assert _plan(store, *NEURAL, "--video-memory-level", "2", "--execution-thread-count", "2",
                 target=video).generator_threads is None  # the user's own count is every model's
    assert _plan(store, *NEURAL, "--video-memory-level", "2", target=Path("b.png")).generator_threads is None


def test_a_budget_on_a_gpu_caps_the_device_arena_unless_a_limit_is_given(store: Store) -> None:
    assert _plan(store, "--execution-provider", "cuda", "--memory-budget", "3000").runtime.gpu_mem_limit \
        == 3000 * MB
    assert _plan(store, "--execution-provider", "cuda", "--memory-budget", "3000", "--execution-gpu-memory-limit",
                 "2G").runtime.gpu_mem_limit == 2 * (1 << 30)
    assert _plan(store, "--memory-budget", "3000").runtime.gpu_mem_limit is None


def test_strict_levels_plan_one_generator_and_hold_a_chunk_of_frames() -> None:
    needs = (ModelNeed("detector", "detector", 2 * MB, 2 * MB), ModelNeed(SWAPPER, "swapper", 500 * MB, 10 * MB),
             ModelNeed(ENHANCER, "enhancer", 300 * MB, 20 * MB))
    resident = plan_memory(needs, None, 100 * MB, "cpu", 3 * MB, 8, 4, 1)
    strict = plan_memory(needs, None, 100 * MB, "cpu", 3 * MB, 8, 4, 1, one_generator=True, chunked=True)
    assert resident.pool_budget_bytes is None and resident.all_resident
    assert strict.pool_budget_bytes == 502 * MB + CONSTANTS_SLACK and not strict.all_resident
    assert strict.estimated_peak_bytes == resident.estimated_peak_bytes - 300 * MB + 4 * 3 * MB
    # A lone generator: nothing takes turns, no pool budget to evict it (or the emap read beside it) by.
    lone = plan_memory(needs[:2], None, 100 * MB, "cpu", 3 * MB, 8, 4, 1, one_generator=True, chunked=True)
    assert lone.pool_budget_bytes is None and lone.all_resident


def test_analysis_models_go_to_the_cpu_only_at_strict_levels_on_a_gpu(store: Store) -> None:
    on_cpu = _plan(store, "--execution-provider", "cuda", "--video-memory-level", "2", *NEURAL).cpu_only
    assert "face_landmark" in on_cpu and SWAPPER not in on_cpu and ENHANCER not in on_cpu
    assert _plan(store, "--execution-provider", "cuda", *NEURAL).cpu_only == ()
    assert _plan(store, "--video-memory-level", "2", *NEURAL).cpu_only == ()


def _store_variant(store: Store, name: str, variant: str, verdict: str) -> None:
    original = store.path(name)
    path = store.variant_location(f"{name}.{variant}")
    record = VariantRecord(model=name, variant=variant, sha256=sha256_file(original),
                           original_sha256=store.catalog.get(name).sha256 or store.recorded(name) or "",
                           size=original.stat().st_size, verdict=verdict, created=now())
    store.put_variant(path, original.read_bytes(), record)


def test_level_3_picks_the_stored_variants_that_passed_their_gate(tmp_path: Path, store: Store) -> None:
    home = nm.isolated_store(tmp_path / "home", store, models_dir=nm.place_standins(tmp_path / "placed"))
    _store_variant(home, SWAPPER, "int8", PASS)
    _store_variant(home, ENHANCER, "int8", "fail")
    _store_variant(home, ENHANCER, "int8-dynamic", PASS)
    _store_variant(home, "face_landmark", "fp16", PASS)
    assert dict(_plan(home, "--video-memory-level", "3", *NEURAL).variants) == {SWAPPER: f"{SWAPPER}.int8",
                                                                                ENHANCER: f"{ENHANCER}.int8-dynamic"}
    on_gpu = _plan(home, "--video-memory-level", "3", "--execution-provider", "cuda", *NEURAL)
    assert dict(on_gpu.variants) == {"face_landmark": "face_landmark.fp16"}
    chosen = _plan(home, "--video-memory-level", "3", "--face-swapper-model", f"{SWAPPER}.fp16")
    assert dict(chosen.variants)[SWAPPER] == f"{SWAPPER}.fp16"


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    return make_clip(tmp_path_factory.mktemp("clip") / "pan.mp4", pan(grace_hopper, (640, 360), 10), fps=25)


def _frames(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def _run_level(level: int, folder: Path, clip: Path, source: Path, placed: Path) -> tuple[list[np.ndarray], dict]:
    output, report = folder / f"level{level}.mp4", folder / f"level{level}.json"
    code = main(["swap", "-s", str(source), "-t", str(clip), "-o", str(output), "--models-dir", str(placed), *NEURAL,
                 "--video-memory-level", str(level), "--report", str(report), "--quiet"])
    assert code == 0
    return _frames(output), json.loads(report.read_text())


def test_levels_change_residency_not_the_frames(models_dir: Path, tmp_path: Path, clip: Path,
                                                astronaut_path: Path) -> None:
    placed = nm.place_standins(models_dir)
    runs = {level: _run_level(level, tmp_path, clip, astronaut_path, placed) for level in range(3)}
    home = Store(home=tmp_path / "home", models_dir=placed)  # the isolated store the runs recorded the models in
    for name in (SWAPPER, ENHANCER):  # copies stand in for int8 variants: level 3 must load them, frames unchanged
        _store_variant(home, name, "int8", PASS)
    runs[3] = _run_level(3, tmp_path, clip, astronaut_path, placed)
    reference = runs[0][0]
    assert len(reference) == 10
    for level in (1, 2, 3):
        assert all(np.array_equal(a, b) for a, b in zip(runs[level][0], reference, strict=True)), level
    stages = {level: {stage["stage"]: stage for stage in report["stages"]} for level, (_, report) in runs.items()}
    assert RECOGNIZER in stages[0]["sources"]["resident"]  # level 0 keeps every model
    assert stages[0]["processing"]["released"] == []
    assert RECOGNIZER in stages[1]["sources"]["released"] and RECOGNIZER not in stages[1]["processing"]["resident"]
    loads = dict(map(tuple, runs[2][1]["pool"]["loads_by_model"]))  # chunks of 8 frames: 2 chunks, a load each
    assert loads[SWAPPER] >= 2 and loads[ENHANCER] >= 2
    assert runs[2][1]["memory_plan"]["queue_frames"] == LEVELS[2].queue_frames
    assert dict(map(tuple, runs[0][1]["pool"]["loads_by_model"]))[SWAPPER] == 1
    assert {f"{SWAPPER}.int8", f"{ENHANCER}.int8"} <= set(dict(map(tuple, runs[3][1]["pool"]["loads_by_model"])))


class _Releases:
    def __init__(self) -> None:
        self.released: list[str] = []

    def release(self, name: str) -> bool:
        self.released.append(name)
        return True


def test_a_lone_generator_stays_loaded_between_chunks() -> None:
    """Level 2 releases each generator after its stage so the next can load; a generator alone is kept (its
    reload every chunk bought nothing and cost a load and its peak)."""
    from slimfuse.memory.levels import LEVELS
    from slimfuse.pipeline.residency import Residency

    pool = _Releases()
    Residency(pool, LEVELS[2], [SWAPPER]).after_stage([SWAPPER])
    assert pool.released == []
    Residency(pool, LEVELS[2], [SWAPPER, ENHANCER]).after_stage([SWAPPER])
    Residency(pool, LEVELS[1], [SWAPPER, ENHANCER]).after_stage([SWAPPER])
    assert pool.released == [SWAPPER]


def test_planning_only_lists_the_variants_to_make(tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch,
                                                  astronaut_path: Path) -> None:
    """A level-3 plan names the large models without a variant and the ungated variants an option chose, and makes,
    gates and writes nothing: the command line does that work, saying so."""
    from slimfuse.pipeline import plan

    monkeypatch.setattr(plan, "MIN_VARIANT_BYTES", 0)
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: pytest.fail("planning ran a process"))
    home = nm.isolated_store(tmp_path / "home", store, models_dir=nm.place_standins(tmp_path / "placed"))
    _store_variant(home, ENHANCER, "int8", UNGATED)
    before = sorted(path.name for path in home.model_dir.iterdir())
    work = _plan(home, "--video-memory-level", "3", "--face-swapper-model", SWAPPER, "--face-enhancer-model",
                 f"{ENHANCER}.int8", target=astronaut_path).variant_work
    assert work.to_make[-2:] == (SWAPPER, RECOGNIZER) and work.techniques == ("int8", "int8-dynamic")
    assert ENHANCER not in work.to_make  # its int8 variant was tried: stored, waiting for its gate
    assert work.to_gate == (f"{ENHANCER}.int8",) and work.pending
    assert work.commands()[-3:] == [f"slimfuse optimize {SWAPPER} --int8 --gate", f"slimfuse optimize {RECOGNIZER} "
                                    "--int8 --gate", f"slimfuse optimize {ENHANCER} --int8 --gate"]
    assert sorted(path.name for path in home.model_dir.iterdir()) == before
    assert not _plan(home, *NEURAL, target=astronaut_path).variant_work.pending  # level 1 wants none

"""`slimfuse bench memory`: stand-ins of real size, the private models home, peak memory of a fresh process tree,
and the harness end to end on small stand-ins and a short clip (each level in its own process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

import neural_models as nm
from slimfuse.bench import memory, standins
from slimfuse.cli.main import main
from slimfuse.models.initializers import last_initializer
from slimfuse.models.runtime import SessionSettings, create_session
from slimfuse.models.store import RECORD_FILE, Store
from slimfuse.models.validate import check_file

SMALL = 1 / 16
FRAMES = 6
REAL_MB = {"inswapper_128": 554.3, "arcface_w600k_r50": 166.0, "gfpgan_1.4": 340.0}
"""The real files' sizes (MB) the stand-ins imitate (FaceFusion's models-3.0.0 assets)."""


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file below `folder` but the stand-in cache: (size, mtime) by relative path."""
    return {str(path.relative_to(folder)): (path.lstat().st_size, path.lstat().st_mtime_ns)
            for path in folder.rglob("*") if "bench-standins" not in path.parts}


@pytest.mark.parametrize("name", standins.MODELS)
def test_standin_has_the_catalog_tensors_and_a_bounded_output(name: str, tmp_path: Path) -> None:
    path = standins.build(name, tmp_path / f"{name}.onnx", SMALL)
    onnx.checker.check_model(str(path), full_check=True)
    spec = nm.spec_of(name)
    assert check_file(spec, path) is None
    session = create_session(path, SessionSettings())
    assert [o.name for o in session.get_outputs()] == [t.name for t in spec.io.outputs]
    rng = np.random.default_rng(0)
    feeds = {}
    for tensor in session.get_inputs():
        shape = [2, *tensor.shape[1:]]  # the batch axis is free
        feeds[tensor.name] = rng.uniform(0.0, 1.0, shape).astype(np.float32) if name == "inswapper_128" \
            else rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    if "source" in feeds:
        feeds["source"] /= np.linalg.norm(feeds["source"], axis=1, keepdims=True)
    output = session.run(None, feeds)[0]
    assert np.all(np.isfinite(output))
    if spec.kind == "recognizer":
        assert output.shape == (2, 512)
        return
    low, high = spec.io.output_range
    image = next(iter(feeds.values()))
    assert output.shape == image.shape and output.min() >= low and output.max() <= high
    change = np.abs(output - image)
    assert 0.001 < change.mean() and change.max() <= 0.1 * (high - low) + 1e-6  # the input, changed a little


def test_inswapper_standin_keeps_its_emap_last(tmp_path: Path) -> None:
    path = standins.build("inswapper_128", tmp_path / "inswapper_128.onnx", SMALL)
    assert last_initializer(path).shape == (512, 512)


@pytest.mark.parametrize("name", standins.MODELS)
def test_standins_have_the_real_files_sizes(name: str) -> None:
    """Counted from the graph without drawing a weight: within 2% of the real file (ArcFace: 5%; its real file
    folds batch norms the stand-in leaves out)."""
    size_mb = standins.parameters(name) * 4 / 1e6
    tolerance = 0.05 if name == "arcface_w600k_r50" else 0.02
    assert abs(size_mb - REAL_MB[name]) <= tolerance * REAL_MB[name] + 1, size_mb


@pytest.mark.slow
def test_a_full_size_standin_is_written_in_bounded_memory(tmp_path: Path) -> None:
    """The 554 MB inswapper stand-in is never wholly in memory: the writer's peak RSS stays far below it. (How long
    it takes is the machine's: `slimfuse bench memory` reports its runs.)"""
    path = tmp_path / "inswapper_128.onnx"
    code = ("import sys; from pathlib import Path; from slimfuse.bench import standins; "
            "standins.build('inswapper_128', Path(sys.argv[1])); "
            "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    peak_kb = done.stdout.split()[-1]
    assert path.stat().st_size > 550e6
    assert int(peak_kb) / 1024 < 250, f"peak {int(peak_kb) / 1024:.0f} MB while writing"
    assert onnx.load(str(path), load_external_data=False).graph.input[0].name == "target"
    path.unlink()  # pytest keeps recent temp folders: not 554 MB of them


def test_cached_standins_are_reused(tmp_path: Path) -> None:
    first = standins.ensure(tmp_path, ("arcface_w600k_r50",), SMALL)
    stamp = first["arcface_w600k_r50"].stat().st_mtime_ns
    again = standins.ensure(tmp_path, ("arcface_w600k_r50",), SMALL)
    assert again == first and again["arcface_w600k_r50"].stat().st_mtime_ns == stamp
    assert standins.VERSION in first["arcface_w600k_r50"].parent.name


def test_measure_counts_the_child_not_the_parent(tmp_path: Path) -> None:
    """A child's ru_maxrss starts from its parent's peak when spawned directly; through the launcher it is its own."""
    ballast = np.ones(400 * (1 << 20) // 8)  # this process: 400 MB more
    code = "import time; block = bytearray(150 * (1 << 20)); time.sleep(0.3)"
    measured = memory.measure([sys.executable, "-c", code], dict(os.environ), tmp_path / "child.log")
    assert measured.exit_code == 0 and measured.pid != os.getpid()
    assert 150 < measured.peak_rss_mb < 300
    assert ballast.sum() > 0


def test_budgets_parse_and_exceeded() -> None:
    assert memory.parse_budgets("none,2600,1500mb,900") == {0: None, 1: 2600.0, 2: 1500.0, 3: 900.0}
    assert memory.parse_budgets(None) == memory.DEFAULT_BUDGETS
    with pytest.raises(ValueError):
        memory.parse_budgets("1,2")
    with pytest.raises(ValueError):
        memory.parse_budgets("none,0,1,2")
    assert memory.exceeded(901.0, 900.0) and not memory.exceeded(900.0, 900.0) and not memory.exceeded(5e3, None)
    assert main(["bench", "memory", "--budgets", "1,2", "--quiet"]) == 2


def _row(level: int, peak: float, psnr: float | None = None, budget: float | None = None) -> memory.Row:
    return memory.Row(level=level, peak_rss_mb=peak, peak_device_mb=None, fps=1.0, psnr_vs_level0=psnr,
                      budget_mb=budget, budget_exceeded=memory.exceeded(peak, budget), weights="w")


def test_verdict() -> None:
    rows = [_row(0, 3000), _row(1, 2000, 100.0), _row(2, 1500, 45.0, 1600), _row(3, 1000, 40.0, 1100)]
    assert memory.verdict(rows).startswith("verdict: goal met")
    assert "level 3 peak 1000 MB = 33% of level 0's 3000 MB" in memory.verdict(rows)
    assert "too high" in memory.verdict([*rows[:3], _row(3, 1200, 40.0)])
    assert "PSNR below" in memory.verdict([*rows[:3], _row(3, 1000, 30.0)])
    assert "budget exceeded at level 3" in memory.verdict([*rows[:3], _row(3, 1000, 40.0, 900)])
    assert "level 2 failed" in memory.verdict([*rows[:2], replace(rows[2], exit_code=41, fps=None), rows[3]])
    assert "level 2 peaked above the level before" in memory.verdict([*rows[:2], _row(2, 2100, 45.0), rows[3]])


def test_the_frame_enhancer_mix_needs_its_real_file(tmp_path: Path, store: Store) -> None:
    user = nm.isolated_store(tmp_path / "user", store)
    with pytest.raises(ValueError, match="real_esrgan_x2"):
        memory.run(store=user, width=SMALL, mixes=("swap+enhance+frame",), notify=lambda message: None)
    arguments = memory.swap_arguments(3, Path("c.mp4"), Path("o.mp4"), Path("r.json"), None,
                                      mix="swap+enhance+frame")
    assert arguments[arguments.index("--frame-enhancer-model") + 1] == "real_esrgan_x2"
    assert "--face-enhancer-model" not in memory.swap_arguments(3, Path("c"), Path("o"), Path("r"), None, mix="swap")


def test_private_home_uses_the_users_real_models_and_their_records(tmp_path: Path, store: Store) -> None:
    user = nm.isolated_store(tmp_path / "user", store)
    for name in standins.MODELS:  # "real" files: small stand-ins placed where the user keeps models
        standins.build(name, user.location(name), SMALL)
    user.path("inswapper_128")  # trusted on first use: a record to carry over
    before = _snapshot(user.home)
    home, label = memory.private_home(tmp_path / "private", user)
    assert label == standins.REAL_LABEL
    for name in standins.MODELS:
        assert (home / "models" / user.catalog.get(name).filename).resolve() == user.location(name).resolve()
    records = json.loads((home / RECORD_FILE).read_text())
    assert records["inswapper_128"]["sha256"] == user.recorded("inswapper_128")
    assert _snapshot(user.home) == before
    assert not (user.home / "bench-standins").exists()  # nothing had to be built
    assert memory.weights_label(["gfpgan_1.4"], ["inswapper_128"]) == (
        f"real weights: gfpgan_1.4; {standins.STANDIN_LABEL}: inswapper_128")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory, store: Store) -> dict:  # type: ignore[type-arg]
    """The benchmark once, on small stand-ins and a 6-frame clip, against a user store of its own."""
    folder = tmp_path_factory.mktemp("bench_memory")
    user = nm.isolated_store(folder / "user", store)
    before = _snapshot(user.home)
    runs: list[tuple[list[str], memory.Measured]] = []
    measure = memory.measure

    def recording(argv, env, log, device=None, interval=memory.POLL_SECONDS):  # type: ignore[no-untyped-def]
        measured = measure(argv, env, log, device, interval)
        runs.append((list(argv), measured))
        return measured

    paths = {"json": folder / "bench.json", "markdown": folder / "bench.md", "plot": folder / "bench.png"}
    budgets = memory.DEFAULT_BUDGETS  # the documented budgets, which the full-size stand-ins' runs fit in
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory, "measure", recording)
        rows = memory.run(frames=FRAMES, budgets=budgets, json_path=paths["json"], markdown_path=paths["markdown"],
                          plot_path=paths["plot"], store=user, width=SMALL, notify=lambda message: None,
                          mixes=("swap", "swap+enhance"))
    return {"rows": rows, "runs": runs, "paths": paths, "user": user, "before": before, "budgets": budgets}


@pytest.mark.slow  # the benchmark fixture: eight levels in fresh processes
def test_every_level_of_every_mix_runs_in_a_fresh_process_after_a_first_load(bench: dict) -> None:  # type: ignore[type-arg]
    first, *runs = bench["runs"]
    assert first[0][1] == "-c" and first[1].exit_code == 0  # every model loaded once before the levels
    assert [argv[argv.index("--video-memory-level") + 1] for argv, _ in runs] == ["0", "1", "2", "3"] * 2
    assert ["--face-enhancer-model" in argv for argv, _ in runs] == [False] * 4 + [True] * 4
    pids = {measured.pid for _, measured in runs}
    assert len(pids) == 8 and os.getpid() not in pids
    for argv, measured in runs:
        assert argv[1:4] == ["-m", "slimfuse", "swap"] and "--report" in argv
        assert measured.exit_code == 0 and measured.peak_rss_mb > 50


@pytest.mark.slow  # the benchmark fixture: eight levels in fresh processes
def test_json_has_the_schema_and_budgets_are_judged(bench: dict) -> None:  # type: ignore[type-arg]
    document = json.loads(bench["paths"]["json"].read_text(),
                          parse_constant=lambda token: pytest.fail(f"{token} in the JSON"))
    rows = document["rows"]
    assert [(row["models"], row["level"]) for row in rows] == [(mix, level) for mix in ("swap", "swap+enhance")
                                                              for level in (0, 1, 2, 3)]
    for row in rows:
        assert {"level", "peak_rss_mb", "peak_device_mb", "fps", "psnr_vs_level0", "budget_mb", "budget_exceeded",
                "weights"} <= set(row)
        assert row["peak_device_mb"] is None  # the CPU provider
        assert row["fps"] > 0 and row["frames"] == FRAMES
        assert row["budget_mb"] == bench["budgets"][row["level"]]
        assert row["budget_exceeded"] == (row["budget_mb"] is not None and row["peak_rss_mb"] > row["budget_mb"])
        assert row["weights"] == "stand-in (random weights, width 0.0625 of real sizes)"
    # Each mix: level 0 its reference, the others close to it, no budget exceeded. Which level peaks highest is not
    # asserted: with stand-ins 1/16 as wide the levels' peaks lie within a few MB of each other (the runtime's own
    # 300 MB dominate), so their order is the noise of the measurement; the benchmark reports it.
    for mix in range(2):
        levels = rows[4 * mix:4 * mix + 4]
        assert levels[0]["psnr_vs_level0"] is None
        assert all(row["psnr_vs_level0"] >= 35.0 for row in levels[1:])  # the goal: at least 35 dB at every level
    assert not any(row["budget_exceeded"] for row in rows)  # the goal: no (documented) budget exceeded
    assert set(document["verdicts"]) == {"swap", "swap+enhance"}
    assert all(text.startswith("verdict: ") for text in document["verdicts"].values())
    assert document["first_load"]["peak_rss_mb"] > 50
    assert set(document["variants"]) == set(standins.MODELS)  # every int8 variant passed its gate
    assert rows[3]["variants"] and all(".int8" in name for name in rows[3]["variants"])


@pytest.mark.slow  # the benchmark fixture: eight levels in fresh processes
def test_the_verdict_judges_the_runs_against_the_documented_goal(bench: dict) -> None:  # type: ignore[type-arg]
    """The peak goal, level 3 at most 35% of level 0's peak, holds for the real models' sizes but cannot on a short
    run with stand-ins 1/16 as wide: about 300 MB of every level's peak is the runtime itself (Python, onnxruntime,
    PyAV, dlib), so level 3 stays near half of level 0. What the run can show is that each mix's verdict measures its
    rows as documented: the ratio, the PSNR floor, each level against the one before, the budgets."""
    verdicts = json.loads(bench["paths"]["json"].read_text())["verdicts"]
    rows = bench["rows"]
    for index, mix in enumerate(("swap", "swap+enhance")):
        levels = rows[4 * index:4 * index + 4]
        text = verdicts[mix]
        peak0, peak3 = levels[0].peak_rss_mb, levels[3].peak_rss_mb
        assert text.startswith("verdict: goal met" if peak3 <= 0.35 * peak0 else "verdict: goal NOT met")
        assert f"level 3 peak {peak3:.0f} MB = {peak3 / peak0:.0%} of level 0's {peak0:.0f} MB (aim <= 35%)" in text
        assert f"PSNR vs level 0 min {min(row.psnr_vs_level0 for row in levels[1:]):.1f} dB (aim >= 35)" in text
        assert text.endswith("no budget exceeded")


@pytest.mark.slow  # the benchmark fixture: eight levels in fresh processes
def test_markdown_and_plot(bench: dict) -> None:  # type: ignore[type-arg]
    table = bench["paths"]["markdown"].read_text()
    assert table.startswith("| models | run | peak RSS MB |") and "| inswapper_128 | level 3 |" in table
    assert "| inswapper_128 + gfpgan_1.4 | level 0 |" in table
    assert "(reference)" in table and "verdict: " in table
    assert bench["paths"]["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # the benchmark fixture: eight levels in fresh processes
def test_the_users_store_is_untouched(bench: dict) -> None:  # type: ignore[type-arg]
    user = bench["user"]
    assert _snapshot(user.home) == bench["before"]
    assert not user.record_file.exists() and not user.variants()
    cached = standins.cache_dir(user.home, SMALL)
    assert sorted(path.name for path in cached.iterdir()) == sorted(
        user.catalog.get(name).filename for name in standins.MODELS)


class FakeNvml:
    """pynvml's functions the benchmark calls, answering from fixed figures."""

    def __init__(self, processes: list[tuple[int, int]], used: int) -> None:
        self.processes, self.used = processes, used

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:  # noqa: N802 - pynvml's names
        return f"gpu{index}"

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> object:  # noqa: N802
        return type("Memory", (), {"used": self.used})()

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list[object]:  # noqa: N802
        return [type("Process", (), {"pid": pid, "usedGpuMemory": used})() for pid, used in self.processes]


def test_device_memory_counts_the_tree_or_falls_back_to_the_device() -> None:
    mb = 1 << 20
    listed = memory.DeviceMemory(FakeNvml([(os.getpid(), 700 * mb), (1, 5000 * mb)], used=9000 * mb))
    listed.start()
    assert listed.used_mb(os.getpid()) == 700.0  # only this tree's processes
    unlisted = memory.DeviceMemory(FakeNvml([(1, 5000 * mb)], used=6000 * mb))
    unlisted.start()
    unlisted.nvml.used = 6800 * mb
    assert unlisted.used_mb(os.getpid()) == 800.0  # the device's use above the start

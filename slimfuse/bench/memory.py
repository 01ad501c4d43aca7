"""`slimfuse bench memory`: the proof of the video memory levels. One job (inswapper_128 then gfpgan_1.4 on a
720p clip made from the packaged photos) at each `--video-memory-level`, each in a fresh process, side by side:
peak memory of the whole process tree, frames/s, and the output's PSNR against level 0's.

The job runs against a private models home (a temporary SLIMFUSE_HOME): the embedded models linked from the
user's store, and the neural models either the user's real files (linked) or stand-ins with the real
architectures' sizes and random weights (slimfuse.bench.standins), so no trust-on-first-use record or variant of
a random stand-in ever reaches the user's store. The int8 variants level 3 uses are made there first with
`slimfuse optimize NAME --int8 --gate` (dynamic int8 where the static variant fails its gate; fp16 with the cuda
provider, as level 3 picks fp16 there).

Peak memory: each run is spawned by a small launcher process (so it does not inherit this process's peak, which
Linux folds into a child's ru_maxrss at exec), and is the largest of the run's ru_maxrss (os.wait4), the sum of
RSS over its process tree polled every 20 ms with psutil, and the peak its run report recorded (the kernel's
high-water mark, never reset). With
`--execution-provider cuda`, device memory is polled through NVML (pynvml), where it can be read.
"""
from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from slimfuse.log import notice
from slimfuse.bench import standins
from slimfuse.memory.probe import maxrss_bytes, tree_rss_bytes
from slimfuse.models.store import RECORD_FILE, Store
from slimfuse.samples import sample_path

LOG = logging.getLogger(__name__)

LEVELS: tuple[int, ...] = (0, 1, 2, 3)
SWAPPER = "inswapper_128"
ENHANCER = "gfpgan_1.4"
FRAME_ENHANCER = "real_esrgan_x2"
MIXES: dict[str, tuple[str, ...]] = {"swap": (SWAPPER,), "swap+enhance": (SWAPPER, ENHANCER),
                                     "swap+enhance+frame": (SWAPPER, ENHANCER, FRAME_ENHANCER)}
"""`--models` choices: the generators of each job. There is no stand-in of the frame enhancer (a real
real_esrgan_x2 file in the store is used; without one that mix is refused)."""
DEFAULT_MIXES = ("swap+enhance",)
DEFAULT_FRAMES = 48
DEFAULT_BUDGETS: dict[int, float | None] = {0: None, 1: 2400.0, 2: 2000.0, 3: 1100.0}
"""MB per level (None: no budget), each level's plan fitting on the stand-ins (measured; see the README)."""
GOAL_PEAK_RATIO = 0.35
GOAL_PSNR_DB = 35.0
POLL_SECONDS = 0.02
MB = 1 << 20

LevelFlags = Callable[[int], list[str]]


def level_flags(level: int) -> list[str]:
    """The swap options that select memory level `level`."""
    return ["--video-memory-level", str(level)]


@dataclass(frozen=True)
class Row:
    level: int
    peak_rss_mb: float | None
    peak_device_mb: float | None
    fps: float | None
    psnr_vs_level0: float | None
    """Mean PSNR over frames of this level's output against level 0's (None for level 0 itself; identical
    frames count as slimfuse.metrics.IDENTICAL_PSNR)."""
    budget_mb: float | None
    budget_exceeded: bool
    weights: str
    frames: int | None = None
    seconds: float | None = None
    """Wall time of the whole run (models loaded, source prepared, frames processed, file written)."""
    variants: list[str] = field(default_factory=list)
    """The reduced-precision variants the run loaded (from its report)."""
    exit_code: int = 0
    error: str | None = None
    models: str = "swap+enhance"
    """The mix of models (a MIXES key)."""


@dataclass(frozen=True)
class Measured:
    """What a child process tree used."""

    exit_code: int
    seconds: float
    peak_rss_mb: float
    peak_device_mb: float | None
    pid: int


@dataclass(frozen=True)
class Prepared:
    """The private models home and what is in it."""

    home: Path
    weights: str
    """The label of the rows: stand-ins, real weights, or which is which."""
    variants: dict[str, str]
    """Model -> the variant made for it (NAME.int8 or NAME.int8-dynamic), for those that passed their gate."""


# Budgets ---------------------------------------------------------------------------------------------------------

def parse_budgets(text: str | None, levels: Sequence[int] = LEVELS) -> dict[int, float | None]:
    """'none,2600,1500,900' -> {0: None, 1: 2600.0, ...}; None or '' -> DEFAULT_BUDGETS."""
    if not text:
        return {level: DEFAULT_BUDGETS.get(level) for level in levels}
    parts = [part.strip().lower() for part in text.split(",")]
    if len(parts) != len(levels):
        raise ValueError(f"--budgets takes one value per level ({len(levels)}), got {len(parts)}: {text}")
    budgets: dict[int, float | None] = {}
    for level, part in zip(levels, parts, strict=True):
        if part in ("none", "-", ""):
            budgets[level] = None
            continue
        value = float(part.removesuffix("mb"))
        if not value > 0:
            raise ValueError(f"a budget must be positive MB or none, got {part}")
        budgets[level] = value
    return budgets


def exceeded(peak_mb: float | None, budget_mb: float | None) -> bool:
    return budget_mb is not None and peak_mb is not None and peak_mb > budget_mb


# The private models home -----------------------------------------------------------------------------------------

def private_home(home: Path, store: Store, width: float = 1.0) -> tuple[Path, str]:
    """Fill models home `home` for the benchmark job: the user's embedded models and real neural models linked,
    stand-ins (built into the user's cache folder once) for the neural models the user does not have (for all of
    them at a `width` other than 1); the real models' recorded sha256 carried over. Returns the home and the rows'
    weights label."""
    folder = home / "models"
    folder.mkdir(parents=True, exist_ok=True)
    for name in store.pinned_names():
        _link(store.path(name), folder / store.catalog.get(name).filename)
    real = [name for name in (*standins.MODELS, FRAME_ENHANCER) if width == 1.0 and store.location(name).is_file()]
    stand_ins = standins.ensure(store.home, tuple(name for name in standins.MODELS if name not in real), width)
    records = {}
    for name in real:
        _link(store.location(name), folder / store.catalog.get(name).filename)
        if store.recorded(name) is not None:
            records[name] = {"sha256": store.recorded(name), "file": str(folder / store.catalog.get(name).filename)}
    for name, path in stand_ins.items():
        _link(path, folder / store.catalog.get(name).filename)
    if records:
        (home / RECORD_FILE).write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    return home, weights_label(real, list(stand_ins), width)


def weights_label(real: Sequence[str], stand_ins: Sequence[str], width: float = 1.0) -> str:
    standin = standins.STANDIN_LABEL if width == 1.0 else f"stand-in (random weights, width {width:g} of real sizes)"
    if not stand_ins:
        return standins.REAL_LABEL
    if not real:
        return standin
    return f"{standins.REAL_LABEL}: {', '.join(real)}; {standin}: {', '.join(stand_ins)}"


def _link(source: Path, link: Path) -> None:
    link.unlink(missing_ok=True)
    try:
        link.symlink_to(source.resolve())
    except OSError:  # no symlinks here (Windows without the privilege): a copy
        import shutil

        shutil.copyfile(source, link)


def slimfuse_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "slimfuse", *arguments]


CPU_TECHNIQUES = ((("--int8",), "int8"), (("--int8", "--dynamic"), "int8-dynamic"))
GPU_TECHNIQUES = ((("--fp16",), "fp16"),)
"""The variants level 3 picks (slimfuse.pipeline.run_memory), in its order: on the CPU static int8, else dynamic."""


def make_variants(home: Path, names: Sequence[str], work: Path, provider: str | None = None,
                  notify: Callable[[str], None] = lambda message: None) -> dict[str, str]:
    """`slimfuse optimize NAME --int8 --gate` for each model in home `home` (each in a subprocess), and where the
    static variant fails its gate, `--int8 --dynamic`; with the cuda provider `--fp16 --gate`. Returns the variant
    stored for each model that has one."""
    made = {}
    env = {**os.environ, "SLIMFUSE_HOME": str(home)}
    for name in names:
        for flags, variant in GPU_TECHNIQUES if provider == "cuda" else CPU_TECHNIQUES:
            result_path = work / f"{name}.{variant}.gate.json"
            started = time.perf_counter()
            done = subprocess.run(slimfuse_command("optimize", name, *flags, "--gate", "--quiet",
                                                   "--json", str(result_path)),
                                  env=env, capture_output=True, text=True, check=False)
            gate = _read_json(result_path)
            notify(f"bench memory: {name}.{variant}: {gate.get('metric')} {_number(gate.get('value'))} "
                   f"({gate.get('verdict', 'no verdict')}, {time.perf_counter() - started:.0f} s)")
            if done.returncode == 0:
                made[name] = f"{name}.{variant}"
                break
            if not gate:  # it did not get as far as the gate: say why, and try no other way
                LOG.warning(f"bench memory: {name}: {last_line(done.stderr)}")
                break
    return made


def _number(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


# Measuring a process tree ----------------------------------------------------------------------------------------

LAUNCHER = """
import json, os, sys

request = json.loads(sys.stdin.readline())
log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
pid = os.posix_spawn(request["argv"][0], request["argv"], request["env"],
                     file_actions=[(os.POSIX_SPAWN_DUP2, log, 1), (os.POSIX_SPAWN_DUP2, log, 2)])
os.close(log)
print(pid, flush=True)
_, status, usage = os.wait4(pid, 0)
print(json.dumps({"exit_code": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss}), flush=True)
"""
"""Runs the measured command and reports its pid, then its exit code and ru_maxrss. A fresh interpreter of its
own: a child's ru_maxrss starts from its parent's peak (the parent's memory is folded in at exec), and the
launcher's peak is a few MB."""


def measure(argv: Sequence[str], env: Mapping[str, str], log: Path, device: DeviceMemory | None = None,
            interval: float = POLL_SECONDS) -> Measured:
    """Run `argv` (output to `log`) and measure the peak RSS of its process tree and, given `device`, its peak
    device memory."""
    launcher = subprocess.Popen([sys.executable, "-I", "-S", "-c", LAUNCHER], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    assert launcher.stdin is not None and launcher.stdout is not None
    started = time.perf_counter()
    launcher.stdin.write(json.dumps({"argv": list(argv), "env": dict(env), "log": str(log)}) + "\n")
    launcher.stdin.close()
    line = launcher.stdout.readline()
    if not line.strip():
        launcher.wait()
        raise RuntimeError(f"the benchmark's launcher could not start {argv[0]}")
    pid = int(line)
    finished: list[str] = []
    reader = threading.Thread(target=lambda: finished.append(launcher.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    peak_tree = 0
    peak_device: float | None = None
    if device is not None:
        device.start()
    while reader.is_alive():
        peak_tree = max(peak_tree, tree_rss_bytes(pid))
        if device is not None:
            peak_device = _max(peak_device, device.used_mb(pid))
        reader.join(interval)
    seconds = time.perf_counter() - started
    launcher.wait()
    result = json.loads(finished[0]) if finished and finished[0].strip() else {"exit_code": -1, "maxrss": 0}
    maxrss = maxrss_bytes(int(result["maxrss"]))
    return Measured(exit_code=int(result["exit_code"]), seconds=seconds, peak_rss_mb=max(maxrss, peak_tree) / MB,
                    peak_device_mb=peak_device, pid=pid)


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


class DeviceMemory:
    """Device memory a process tree holds, through NVML (pynvml): the memory NVML lists for the tree's processes,
    or, where it lists none of them (a container's own process ids), the device's used memory above what was used
    when the run started."""

    def __init__(self, nvml: Any, index: int = 0) -> None:
        self.nvml = nvml
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        self.baseline = 0

    @classmethod
    def open(cls, index: int = 0) -> DeviceMemory | None:
        """None without pynvml or a driver."""
        from slimfuse.memory.probe import load_nvml

        nvml = load_nvml()
        if nvml is None:
            return None
        try:
            nvml.nvmlInit()
            return cls(nvml, index)
        except Exception:  # noqa: BLE001 - NVMLError and friends: no usable driver
            return None

    def start(self) -> None:
        self.baseline = int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)

    def used_mb(self, pid: int) -> float | None:
        try:
            pids = {pid}
            try:
                pids |= {child.pid for child in psutil.Process(pid).children(recursive=True)}
            except psutil.Error:
                pass
            listed = [p for p in self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle) if p.pid in pids]
            if listed:
                return sum(int(p.usedGpuMemory or 0) for p in listed) / MB
            used = int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)
            return max(0, used - self.baseline) / MB
        except Exception:  # noqa: BLE001 - a query NVML cannot answer
            return None

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


# The benchmark ---------------------------------------------------------------------------------------------------

def swap_arguments(level: int, clip: Path, output: Path, report: Path, budget: float | None,
                   flags: LevelFlags = level_flags, provider: str | None = None,
                   mix: str = "swap+enhance") -> list[str]:
    models = MIXES[mix]
    arguments = ["swap", "-s", str(sample_path("astronaut")), "-t", str(clip), "-o", str(output),
                 "--face-swapper-model", SWAPPER, *flags(level)]
    if ENHANCER in models:
        arguments += ["--face-enhancer-model", ENHANCER]
    if FRAME_ENHANCER in models:
        arguments += ["--frame-enhancer-model", FRAME_ENHANCER]
    if budget is not None:
        arguments += ["--memory-budget", f"{budget:g}"]
    if provider is not None and provider != "cpu":
        arguments += ["--execution-provider", provider]
    return arguments + ["--report", str(report), "--quiet"]


def run_level(level: int, clip: Path, folder: Path, home: Path, budget: float | None, weights: str,
              frames: int, flags: LevelFlags = level_flags, provider: str | None = None,
              mix: str = "swap+enhance") -> tuple[Row, Path]:
    """Run the job at `level` in a fresh process; its row (PSNR still to come) and its output file."""
    stem = f"{mix}-level{level}"
    output, report_path, log = folder / f"{stem}.mp4", folder / f"{stem}.json", folder / f"{stem}.log"
    argv = slimfuse_command(*swap_arguments(level, clip, output, report_path, budget, flags, provider, mix))
    device = DeviceMemory.open() if provider == "cuda" else None
    try:
        measured = measure(argv, {**os.environ, "SLIMFUSE_HOME": str(home)}, log, device)
    finally:
        if device is not None:
            device.close()
    report = _read_json(report_path)
    written, processing = _processing(report)
    frames_done = written if written is not None else frames
    fps = None
    if measured.exit_code == 0:
        fps = frames_done / (processing if processing else measured.seconds)
    peak_rss = max(measured.peak_rss_mb, _report_peak(report))
    compared = measured.peak_device_mb if provider == "cuda" and measured.peak_device_mb is not None else peak_rss
    error = None
    if measured.exit_code != 0:
        error = last_line(log.read_text(encoding="utf-8", errors="replace") if log.exists() else "")
    row = Row(level=level, peak_rss_mb=round(peak_rss, 1),
              peak_device_mb=None if measured.peak_device_mb is None else round(measured.peak_device_mb, 1),
              fps=None if fps is None else round(fps, 3), psnr_vs_level0=None, budget_mb=budget,
              budget_exceeded=exceeded(compared, budget), weights=weights, frames=frames_done,
              seconds=round(measured.seconds, 2), variants=_variants_used(report), exit_code=measured.exit_code,
              error=error, models=mix)
    return row, output


def _report_peak(report: Mapping[str, Any]) -> float:
    """The run's own peak RSS by its report (MB; 0 without one): the kernel's high-water mark, which also holds a
    spike shorter than the polling interval."""
    value = report.get("peak_rss_mb")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _processing(report: Mapping[str, Any]) -> tuple[int | None, float | None]:
    """Frames written and the seconds of the processing stage, from a run report (None where it lacks them)."""
    results = report.get("results") or {}
    written = results.get("frames_written") if isinstance(results, dict) else None
    seconds = next((stage.get("seconds") for stage in report.get("stages") or []
                    if isinstance(stage, dict) and stage.get("stage") == "processing"), None)
    return (int(written) if isinstance(written, int) else None,
            float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else None)


def _variants_used(report: Mapping[str, Any]) -> list[str]:
    """The variants (NAME.VARIANT) among the models the run's sessions ran, from its report."""
    from slimfuse.models.catalog import Catalog
    from slimfuse.models.variants import split_name

    providers = report.get("providers") or {}
    used = providers.get("used") if isinstance(providers, dict) else None
    names = Catalog().names()
    found = []
    for name in used if isinstance(used, dict) else {}:
        try:
            if split_name(name, names)[1] is not None:
                found.append(name)
        except KeyError:
            continue
    return sorted(found)


def run(frames: int = DEFAULT_FRAMES, budgets: Mapping[int, float | None] | None = None,
        json_path: Path | None = None, markdown_path: Path | None = None, plot_path: Path | None = None,
        provider: str | None = None, store: Store | None = None, width: float = 1.0,
        flags: LevelFlags = level_flags, levels: Sequence[int] = LEVELS,
        notify: Callable[[str], None] | None = None, mixes: Sequence[str] = DEFAULT_MIXES) -> list[Row]:
    """The benchmark: every mix of `mixes` at every level of `levels`, each in a fresh process; prints a table
    and a verdict per mix. ValueError for the frame enhancer's mix without a real_esrgan_x2 file in the store."""
    from slimfuse.bench.video import make_bench_clip

    store = store or Store(notify=lambda message: None)
    notify = notify or notice
    if any(FRAME_ENHANCER in MIXES[mix] for mix in mixes) and not store.location(FRAME_ENHANCER).is_file():
        raise ValueError(f"the mix with the frame enhancer needs a {FRAME_ENHANCER} file in the model store "
                         "(there is no stand-in of it); see slimfuse models path")
    budgets = dict(budgets) if budgets is not None else {level: DEFAULT_BUDGETS.get(level) for level in levels}
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-memory-") as work:
        folder = Path(work)
        home, weights = private_home(folder / "home", store, width)
        notify(f"bench memory: models: {weights}")
        names = tuple(dict.fromkeys(["arcface_w600k_r50", *(name for mix in mixes for name in MIXES[mix])]))
        variants = make_variants(home, names, folder, provider, notify)
        first = prepare_models(home, names, variants, folder, provider)
        notify(f"bench memory: first load of each model (prepared for this CPU once): peak "
               f"{first.peak_rss_mb:.0f} MB, {first.seconds:.0f} s")
        clip = make_bench_clip(folder, frames)
        rows = run_mixes(clip, folder, home, weights, frames, mixes, levels, budgets, flags, provider, notify)
        prepared = Prepared(home, weights, variants)
    text = markdown(rows, frames, prepared, provider)
    print(text)
    if markdown_path is not None:
        markdown_path.write_text(text + "\n", encoding="utf-8")
    if json_path is not None:
        document = {"frames": frames, "size": [1280, 720], "mixes": {mix: list(MIXES[mix]) for mix in mixes},
                    "execution_provider": provider or "cpu", "variants": prepared.variants,
                    "first_load": {"peak_rss_mb": round(first.peak_rss_mb, 1), "seconds": round(first.seconds, 2)},
                    "goal": {"peak_ratio": GOAL_PEAK_RATIO, "psnr_db": GOAL_PSNR_DB},
                    "verdicts": {mix: verdict(_of_mix(rows, mix)) for mix in mixes},
                    "rows": [asdict(row) for row in rows]}
        json_path.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    if plot_path is not None:
        plot(rows, plot_path, frames)
    return rows


def run_mixes(clip: Path, folder: Path, home: Path, weights: str, frames: int, mixes: Sequence[str],
              levels: Sequence[int], budgets: Mapping[int, float | None], flags: LevelFlags = level_flags,
              provider: str | None = None, notify: Callable[[str], None] = notice) -> list[Row]:
    """Every mix at every level on `clip`, each in a fresh process against models home `home`; the rows, with
    each level's PSNR against level 0's output of its mix."""
    from slimfuse.bench.video import mean_psnr

    rows: list[Row] = []
    for mix in mixes:
        outputs: dict[int, Path] = {}
        measured: list[Row] = []
        for level in levels:
            row, output = run_level(level, clip, folder, home, budgets.get(level), weights, frames, flags,
                                    provider, mix)
            notify(f"bench memory: {mix}, level {level}: peak {row.peak_rss_mb} MB, "
                   f"{'failed: ' + (row.error or '') if row.exit_code else f'{row.fps} frames/s'}")
            measured.append(row)
            outputs[level] = output
        rows += [_with_psnr(row, outputs.get(0), outputs[row.level], mean_psnr) for row in measured]
    return rows


PREPARE = """
import sys
from slimfuse.models.pool import ModelPool
from slimfuse.models.runtime import SessionSettings
from slimfuse.models.store import Store
names = sys.argv[1].split(",")
variants = dict(item.split("=") for item in sys.argv[2].split(",") if item)
store = Store(notify=lambda message: None)
runtime = SessionSettings(providers=(sys.argv[3],))
for pool in (ModelPool(store, runtime), ModelPool(store, runtime, variants=variants)):
    for name in names:
        pool.session(name)
        pool.release(name)
"""
"""Loads each model, and each variant, once: what a first run does before its first frame (ONNX Runtime's graph
prepared for this CPU, slimfuse.models.prepared), so no level's row carries that one-time cost."""


def prepare_models(home: Path, names: Sequence[str], variants: Mapping[str, str], folder: Path,
                   provider: str | None = None) -> Measured:
    """The first load of `names` (and their `variants`) in a fresh process, measured."""
    argv = [sys.executable, "-c", PREPARE, ",".join(names), ",".join(f"{k}={v}" for k, v in variants.items()),
            provider or "cpu"]
    measured = measure(argv, {**os.environ, "SLIMFUSE_HOME": str(home)}, folder / "prepare.log")
    if measured.exit_code != 0:
        raise RuntimeError(f"loading the models failed: {last_line((folder / 'prepare.log').read_text())}")
    return measured


def _of_mix(rows: Sequence[Row], mix: str) -> list[Row]:
    return [row for row in rows if row.models == mix]


def _with_psnr(row: Row, reference: Path | None, output: Path, psnr_of: Callable[[Path, Path], float]) -> Row:
    if row.level == 0 or reference is None or row.exit_code != 0 or not reference.is_file() or not output.is_file():
        return row
    value = psnr_of(reference, output)
    return Row(**{**asdict(row), "psnr_vs_level0": round(value, 2) if math.isfinite(value) else None})


# Results ---------------------------------------------------------------------------------------------------------

def peak_of(row: Row) -> float | None:
    """The peak the goal and the budget are about: device memory where it was measured, else process RSS."""
    return row.peak_device_mb if row.peak_device_mb is not None else row.peak_rss_mb


def verdict(rows: Sequence[Row]) -> str:
    """One line for one mix's rows: does level 3 peak at most GOAL_PEAK_RATIO of level 0, each level at most the
    one before, with PSNR >= GOAL_PSNR_DB and no budget exceeded?"""
    by_level = {row.level: row for row in rows}
    failed = [row.level for row in rows if row.exit_code != 0]
    problems = [f"level {level} failed" for level in failed]
    first, last = by_level.get(0), by_level.get(3)
    detail = []
    if first is None or last is None or peak_of(first) is None or peak_of(last) is None or 0 in failed or 3 in failed:
        problems.append("levels 0 and 3 are both needed for the peak ratio")
    else:
        ratio = peak_of(last) / peak_of(first)  # type: ignore[operator]
        detail.append(f"level 3 peak {peak_of(last):.0f} MB = {ratio:.0%} of level 0's {peak_of(first):.0f} MB "
                      f"(aim <= {GOAL_PEAK_RATIO:.0%})")
        if ratio > GOAL_PEAK_RATIO:
            problems.append("level 3's peak is too high")
    psnrs = [row.psnr_vs_level0 for row in rows if row.level != 0 and row.exit_code == 0]
    if any(value is None for value in psnrs):
        problems.append("a PSNR could not be measured")
    measured = [value for value in psnrs if value is not None]
    if measured:
        detail.append(f"PSNR vs level 0 min {min(measured):.1f} dB (aim >= {GOAL_PSNR_DB:g})")
        if min(measured) < GOAL_PSNR_DB:
            problems.append("PSNR below the aim")
    ordered = sorted((row for row in rows if row.exit_code == 0 and peak_of(row) is not None), key=lambda r: r.level)
    higher = [later.level for earlier, later in zip(ordered, ordered[1:], strict=False)
              if peak_of(later) > peak_of(earlier)]  # type: ignore[operator]
    if higher:
        problems.append(f"level {', '.join(map(str, higher))} peaked above the level before")
    over = [row.level for row in rows if row.budget_exceeded]
    detail.append("no budget exceeded" if not over else f"budget exceeded at level {', '.join(map(str, over))}")
    if over:
        problems.append("a budget was exceeded")
    head = "goal met" if not problems else "goal NOT met (" + "; ".join(problems) + ")"
    return f"verdict: {head}: " + "; ".join(detail)


def markdown(rows: Sequence[Row], frames: int, prepared: Prepared | None = None, provider: str | None = None) -> str:
    mixes = list(dict.fromkeys(row.models for row in rows))
    header = ["models", "run", "peak RSS MB", "x level 0", "peak device MB", "frames/s", "PSNR vs level 0 dB", "budget MB",
              "within budget", "variants used", "weights"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    bases = {row.models: peak_of(row) for row in rows if row.level == 0 and row.exit_code == 0}
    for row in rows:
        peak, base = peak_of(row), bases.get(row.models)
        cells = [" + ".join(MIXES[row.models]), f"level {row.level}", cell(row.peak_rss_mb, ".0f"),
                 "" if base is None or peak is None or row.exit_code else f"{peak / base:.2f}",
                 cell(row.peak_device_mb, ".0f"),
                 cell(row.fps, ".2f") if row.exit_code == 0 else f"failed (exit {row.exit_code}): {row.error}",
                 "(reference)" if row.level == 0 else cell(row.psnr_vs_level0, ".1f"),
                 "none" if row.budget_mb is None else f"{row.budget_mb:g}",
                 "no" if row.budget_exceeded else "yes", ", ".join(row.variants) or "-", row.weights]
        lines.append("| " + " | ".join(cells) + " |")
    made = ", ".join(prepared.variants.values()) if prepared and prepared.variants else "none"
    lines.append(f"\n{frames} frames of 1280x720 (a camera pan over the packaged Grace Hopper photo, source the "
                 f"astronaut), provider {provider or 'cpu'}; each level in a fresh process, after a first load "
                 "that prepared every model for this CPU; peak memory of the whole process tree; frames/s over "
                 f"the processing stage; variants made and gated first: {made}.")
    lines += [f"\n{' + '.join(MIXES[mix])}: {verdict(_of_mix(rows, mix))}" for mix in mixes]
    return "\n".join(lines)


def cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def plot(rows: Sequence[Row], path: Path, frames: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 3.6))
    peaks = [peak_of(row) or 0.0 for row in rows]
    several = len({row.models for row in rows}) > 1
    labels = [f"{row.models}\nlevel {row.level}" if several else f"level {row.level}" for row in rows]
    bars = axes.bar(labels, peaks, color=["C3" if row.budget_exceeded or row.exit_code else "C0" for row in rows])
    for bar, row in zip(bars, rows, strict=True):
        note = f"{bar.get_height():.0f} MB\n{row.fps:.2f} fps" if row.fps is not None else "failed"
        top = max(bar.get_height(), row.budget_mb or 0.0)
        axes.annotate(note, (bar.get_x() + bar.get_width() / 2, top), ha="center", va="bottom", fontsize=9,
                      xytext=(0, 2), textcoords="offset points")
        if row.budget_mb is not None:
            axes.hlines(row.budget_mb, bar.get_x(), bar.get_x() + bar.get_width(), colors="k", linestyles="dashed")
    base = next((peak_of(row) for row in rows if row.level == 0 and row.exit_code == 0), None)
    if base:
        axes.axhline(base * GOAL_PEAK_RATIO, color="C2", linewidth=1, label=f"aim: {GOAL_PEAK_RATIO:.0%} of level 0")
        axes.legend(loc="upper right", fontsize=8)
    device = any(row.peak_device_mb is not None for row in rows)
    axes.set_ylabel("peak device MB" if device else "peak RSS MB (process tree)")
    axes.set_title(f"slimfuse bench memory ({frames} frames 720p; dashed: budget)", fontsize=10)
    axes.margins(y=0.2)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)

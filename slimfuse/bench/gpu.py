"""`slimfuse bench gpu`: the CUDA path checked in one run of a few minutes, on a machine with an NVIDIA GPU,
onnxruntime-gpu and nvidia-ml-py. In order:

1. `slimfuse doctor --execution-provider cuda --json` in a child process: the GPU, whether CUDA works, the profile.
2. The fp16 variants of arcface_w600k_r50, inswapper_128 and gfpgan_1.4 (the stand-ins of real size where the real
   files are missing, slimfuse.bench.standins) made as `slimfuse optimize NAME --fp16 --gate` makes them, and judged
   by the quality gate against their fp32 originals with both running on CUDA (slimfuse.bench.gpu_gate, in a child
   process); the ones that pass are stored, and are what level 3 loads below.
3. The memory benchmark's jobs `swap` and `swap+enhance` (slimfuse.bench.memory) at every --video-memory-level on a
   720p clip, with `--execution-provider cuda --strict-provider` (a CPU fallback fails the run instead of hiding
   in it), each in a fresh process: peak device memory through NVML, peak RSS, frames/s, PSNR against level 0.
4. `swap+enhance` at level 1 under `--execution-gpu-memory-limit 3.5G`: it holds when the run's peak device memory
   (NVML, the whole process: the CUDA context and cuDNN's workspaces too) stays at or under 3.5 GiB.
5. `pytest tests/parity` with SLIMFUSE_PARITY_PROVIDER=cuda, from the checkout this slimfuse runs from (the parity
   tests run their slimfuse stages on that provider and accept fp32 within 40 dB of the CPU-recorded reference).

It prints one table (and writes it as JSON with --json PATH) and exits 1 when a check failed. Without a working
CUDA provider, or without NVML, it stops at once with one line (exit 17) before any work.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from slimfuse.bench import memory
from slimfuse.errors import ProviderUnavailableError
from slimfuse.log import notice
from slimfuse.models.store import Store

PROVIDER = "cuda"
DEFAULT_FRAMES = 24
MIXES = ("swap", "swap+enhance")
GATED = ("arcface_w600k_r50", memory.SWAPPER, memory.ENHANCER)
GPU_LIMIT = "3.5G"
GPU_LIMIT_MB = 3.5 * 1024
LIMIT_MIX, LIMIT_LEVEL = "swap+enhance", 1
PARITY_ENV = "SLIMFUSE_PARITY_PROVIDER"
PARITY_TIMEOUT = 240
DOCTOR_TIMEOUT = 120
NO_PARITY_TESTS = 5
"""pytest's exit code when it collected no test."""
GB = 1 << 30


@dataclass(frozen=True)
class DoctorCheck:
    exit_code: int
    gpus: tuple[str, ...]
    provider_state: str
    """The provider checked: "works", or "unusable (the error)"."""
    recommended_profile: str | None

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and self.provider_state == "works"


@dataclass(frozen=True)
class LimitCheck:
    limit: str
    limit_mb: float
    row: memory.Row

    @property
    def passed(self) -> bool:
        peak = self.row.peak_device_mb
        return self.row.exit_code == 0 and peak is not None and peak <= self.limit_mb


@dataclass(frozen=True)
class GateRow:
    model: str
    metric: str | None
    value: float | None
    threshold: float | None
    higher_is_better: bool | None
    verdict: str | None
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.verdict == "pass"


@dataclass(frozen=True)
class ParityCheck:
    exit_code: int | None
    """pytest's exit code; None when the tests were not run (not a checkout, no pytest) or timed out."""
    summary: str

    @property
    def passed(self) -> bool:
        return self.exit_code in (0, NO_PARITY_TESTS) or self.summary.startswith("not run")


@dataclass(frozen=True)
class GpuReport:
    device: str
    frames: int
    weights: str
    doctor: DoctorCheck
    levels: tuple[memory.Row, ...]
    limit: LimitCheck
    gates: tuple[GateRow, ...]
    parity: ParityCheck
    seconds: float
    provider: str = PROVIDER

    def failures(self) -> list[str]:
        failed = []
        if not self.doctor.passed:
            failed.append(f"doctor (exit {self.doctor.exit_code}, {self.provider} {self.doctor.provider_state})")
        failed += [f"{row.models} level {row.level} (exit {row.exit_code})" for row in self.levels if row.exit_code]
        if not self.limit.passed:
            failed.append(f"--execution-gpu-memory-limit {self.limit.limit}")
        failed += [f"{gate.model}.fp16 gate" for gate in self.gates if not gate.passed]
        if not self.parity.passed:
            failed.append("parity tests")
        return failed

    @property
    def passed(self) -> bool:
        return not self.failures()


# The checks ------------------------------------------------------------------------------------------------------

def require(provider: str = PROVIDER) -> str:
    """The device the benchmark measures ("NAME, N GB"); ProviderUnavailableError (exit 17) when the provider does
    not run here or, for a GPU provider, NVML cannot read the device."""
    from slimfuse.memory import probe
    from slimfuse.models.provider_check import check_providers
    from slimfuse.models.providers import LABELS

    check = check_providers((provider,))[0]
    if not check.works:
        fix = f"; fix: {check.fix}" if check.fix else ""
        raise ProviderUnavailableError(detail=f"bench gpu needs the {LABELS[provider]} execution provider, which "
                                       f"does not work here ({check.error}){fix}")
    if provider == "cpu":  # a rehearsal of the script itself: no device memory to read
        return "cpu (no device memory)"
    gpus = probe.gpus()
    if not gpus:
        raise ProviderUnavailableError(detail="bench gpu reads device memory through NVML, which cannot start here "
                                       "(pip install 'slimfuse[gpu]' for nvidia-ml-py; an NVIDIA driver)")
    return f"{gpus[0].name}, {gpus[0].total_bytes / GB:.0f} GB"


def doctor_check(exit_code: int, stdout: str, provider: str = PROVIDER) -> DoctorCheck:
    """What `slimfuse doctor --execution-provider PROVIDER --json` found, from its exit code and output."""
    try:
        found: dict[str, Any] = json.loads(stdout)
    except ValueError:
        return DoctorCheck(exit_code, (), "unusable (doctor printed no JSON)", None)
    gpus = tuple(f"{gpu['name']}, {gpu['total_bytes'] / GB:.0f} GB" for gpu in found.get("gpus") or ())
    cuda = next((check for check in found.get("providers") or () if check.get("provider") == provider), None)
    state = "unusable (not checked)" if cuda is None else (
        "works" if cuda.get("works") else f"unusable ({cuda.get('error')})")
    return DoctorCheck(exit_code, gpus, state, found.get("recommended_profile"))


def run_doctor(provider: str = PROVIDER) -> DoctorCheck:
    try:
        done = subprocess.run(memory.slimfuse_command("doctor", "--execution-provider", provider, "--json"),
                              capture_output=True, text=True, timeout=DOCTOR_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return DoctorCheck(-1, (), f"unusable (doctor took over {DOCTOR_TIMEOUT} s)", None)
    return doctor_check(done.returncode, done.stdout, provider)


def gate_rows(results: Sequence[dict[str, Any]], names: Sequence[str], problem: str | None = None) -> list[GateRow]:
    """One row per model from slimfuse.bench.gpu_gate's JSON (a row with `problem` for a model it has none of)."""
    by_model = {result.get("model"): result for result in results}
    rows = []
    for name in names:
        result = by_model.get(name)
        if result is None:
            rows.append(GateRow(name, None, None, None, None, None, problem or "no result"))
            continue
        rows.append(GateRow(name, result.get("metric"), result.get("value"), result.get("threshold"),
                            result.get("higher_is_better"), result.get("verdict"), result.get("error")))
    return rows


def gate_on_gpu(home: Path, folder: Path, names: Sequence[str] = GATED, provider: str = PROVIDER) -> list[GateRow]:
    output = folder / "gpu_gates.json"
    done = subprocess.run([sys.executable, "-m", "slimfuse.bench.gpu_gate", "--provider", provider, "--json",
                           str(output), *names], env={**os.environ, "SLIMFUSE_HOME": str(home)},
                          capture_output=True, text=True, check=False)
    results = _read_list(output)
    return gate_rows(results, names, None if done.returncode == 0 else memory.last_line(done.stderr))


def _read_list(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []


def strict_flags(level: int) -> list[str]:
    """The level's options, and no quiet fallback to the CPU."""
    return [*memory.level_flags(level), "--strict-provider"]


def limited_flags(level: int) -> list[str]:
    return [*strict_flags(level), "--execution-gpu-memory-limit", GPU_LIMIT]


def limit_check(clip: Path, folder: Path, home: Path, weights: str, frames: int,
                provider: str = PROVIDER) -> LimitCheck:
    work = folder / "limit"
    work.mkdir(exist_ok=True)
    row, _ = memory.run_level(LIMIT_LEVEL, clip, work, home, None, weights, frames, limited_flags, provider,
                              LIMIT_MIX)
    return LimitCheck(GPU_LIMIT, GPU_LIMIT_MB, row)


def checkout_root() -> Path:
    """The folder above the slimfuse package: the checkout's root when slimfuse runs from one."""
    return Path(__file__).resolve().parents[2]


def run_parity(root: Path | None = None, timeout: float = PARITY_TIMEOUT, provider: str = PROVIDER) -> ParityCheck:
    """`pytest tests/parity` under `root`, the parity tests told to run slimfuse's stages on `provider`."""
    root = root or checkout_root()
    if not (root / "tests" / "parity").is_dir():
        return ParityCheck(None, f"not run: no tests/parity in {root} (run from a checkout)")
    if importlib.util.find_spec("pytest") is None:
        return ParityCheck(None, "not run: pytest is not installed")
    path = os.pathsep.join(part for part in (str(root), os.environ.get("PYTHONPATH", "")) if part)
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/parity"],
                              cwd=root, env={**os.environ, PARITY_ENV: provider, "PYTHONPATH": path},
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return ParityCheck(None, f"timed out after {timeout:g} s")
    summary = memory.last_line(done.stdout)
    if done.returncode == NO_PARITY_TESTS:
        summary = f"no parity tests collected ({summary})"
    return ParityCheck(done.returncode, summary)


def run(frames: int = DEFAULT_FRAMES, json_path: Path | None = None, store: Store | None = None,
        notify: Callable[[str], None] = notice, parity_root: Path | None = None, provider: str = PROVIDER,
        width: float = 1.0) -> GpuReport:
    """Every check, in order; prints the table and returns the report. `provider` "cpu" and a `width` below 1
    (smaller stand-ins) rehearse the script itself on a machine without a GPU."""
    from slimfuse.bench.video import make_bench_clip

    started = time.perf_counter()
    device = require(provider)
    store = store or Store(notify=lambda message: None)
    notify(f"bench gpu: {device}; running slimfuse doctor")
    doctor = run_doctor(provider)
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-gpu-") as work:
        folder = Path(work)
        home, weights = memory.private_home(folder / "home", store, width)
        notify(f"bench gpu: models: {weights}; the fp16 variants made and gated against fp32, both on {provider}")
        gates = gate_on_gpu(home, folder, GATED, provider)
        variants = {gate.model: f"{gate.model}.fp16" for gate in gates if gate.passed}  # what level 3 loads
        memory.prepare_models(home, GATED, variants, folder, provider)
        clip = make_bench_clip(folder, frames)
        levels = memory.run_mixes(clip, folder, home, weights, frames, MIXES, memory.LEVELS, {}, strict_flags,
                                  provider, notify)
        notify(f"bench gpu: {LIMIT_MIX}, level {LIMIT_LEVEL}, --execution-gpu-memory-limit {GPU_LIMIT}")
        limit = limit_check(clip, folder, home, weights, frames, provider)
    notify(f"bench gpu: pytest tests/parity with {PARITY_ENV}={provider}")
    parity = run_parity(parity_root, provider=provider)
    report = GpuReport(device=device, frames=frames, weights=weights, doctor=doctor, levels=tuple(levels),
                       limit=limit, gates=tuple(gates), parity=parity, seconds=round(time.perf_counter() - started, 1),
                       provider=provider)
    print(table(report))
    if json_path is not None:
        json_path.write_text(json.dumps(document(report), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return report


# Results ---------------------------------------------------------------------------------------------------------

def table(report: GpuReport) -> str:
    doctor = report.doctor
    lines = [f"slimfuse bench gpu: {report.device}; {report.frames} frames of 1280x720; {report.weights}; "
             f"{report.seconds:.0f} s",
             "",
             f"doctor (exit {doctor.exit_code}): {'; '.join(doctor.gpus) or 'no GPU listed'}; {report.provider} "
             f"{doctor.provider_state}; "
             f"recommended profile {doctor.recommended_profile or '-'}",
             "",
             "| models | level | peak device MB | peak RSS MB | frames/s | PSNR vs level 0 dB |",
             "|---|---|---|---|---|---|"]
    for row in report.levels:
        speed = memory.cell(row.fps, ".2f") if row.exit_code == 0 else f"failed (exit {row.exit_code}): {row.error}"
        lines.append(f"| {' + '.join(memory.MIXES[row.models])} | {row.level} | {memory.cell(row.peak_device_mb, '.0f')} "
                     f"| {memory.cell(row.peak_rss_mb, '.0f')} | {speed} | "
                     f"{'(reference)' if row.level == 0 else memory.cell(row.psnr_vs_level0, '.1f')} |")
    limit = report.limit
    peak = "not read" if limit.row.peak_device_mb is None else f"{limit.row.peak_device_mb:.0f} MB"
    lines += ["", f"--execution-gpu-memory-limit {limit.limit} ({LIMIT_MIX}, level {limit.row.level}): peak device "
              f"{peak} of at most {limit.limit_mb:.0f} MB: {'holds' if limit.passed else 'DOES NOT HOLD'}"
              + ("" if limit.row.exit_code == 0 else f" (run failed, exit {limit.row.exit_code}: {limit.row.error})"),
              "", f"| fp16 variant on {report.provider} | metric | value | threshold | verdict |", "|---|---|---|---|---|"]
    for gate in report.gates:
        if gate.error is not None:
            lines.append(f"| {gate.model} | - | - | - | error: {gate.error} |")
            continue
        relation = ">=" if gate.higher_is_better else "<="
        lines.append(f"| {gate.model} | {gate.metric} | {memory.cell(gate.value, '.4g')} | {relation} "
                     f"{gate.threshold:g} | {gate.verdict} |")
    parity = report.parity
    state = "not run" if parity.exit_code is None else f"exit {parity.exit_code}"
    lines += ["", f"parity (pytest tests/parity, {PARITY_ENV}={report.provider}): {state}: {parity.summary}", ""]
    failures = report.failures()
    lines.append("verdict: every check passed" if not failures else f"verdict: FAILED: {'; '.join(failures)}")
    return "\n".join(lines)


def document(report: GpuReport) -> dict[str, Any]:
    return {
        "device": report.device, "frames": report.frames, "weights": report.weights, "seconds": report.seconds,
        "execution_provider": report.provider,
        "doctor": {**asdict(report.doctor), "passed": report.doctor.passed},
        "levels": [asdict(row) for row in report.levels],
        "gpu_memory_limit": {"limit": report.limit.limit, "limit_mb": report.limit.limit_mb,
                             "peak_device_mb": report.limit.row.peak_device_mb, "passed": report.limit.passed,
                             "row": asdict(report.limit.row)},
        "fp16_gates": [{**asdict(gate), "passed": gate.passed} for gate in report.gates],
        "parity": {**asdict(report.parity), "env": {PARITY_ENV: report.provider}, "passed": report.parity.passed},
        "failures": report.failures(),
        "passed": report.passed,
    }

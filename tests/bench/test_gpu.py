"""`slimfuse bench gpu`: one line and exit 17 without CUDA; the table and the JSON from fake measurements; doctor's
JSON read; the parity tests run with the provider selected; and the whole script rehearsed on the CPU with small
stand-ins, so the first run on a GPU does not find a broken script."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import onnxruntime as ort
import pytest

import neural_models as nm
from slimfuse.bench import gpu, memory
from slimfuse.cli.main import main
from slimfuse.models.store import Store

NO_CUDA = "CUDAExecutionProvider" not in ort.get_available_providers()


@pytest.mark.skipif(not NO_CUDA, reason="this onnxruntime has the CUDA provider: the benchmark would run")
def test_without_cuda_it_stops_at_once_with_exit_17(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "gpu.json"
    assert main(["bench", "gpu", "--json", str(report)]) == 17
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("slimfuse: bench gpu needs the CUDA execution provider")
    assert "fix: " in err[0] and not report.exists()


def _row(mix: str, level: int, device: float | None, fps: float | None = 9.5, exit_code: int = 0,
         psnr: float | None = 48.2) -> memory.Row:
    return memory.Row(level=level, peak_rss_mb=1400.0 - 100 * level, peak_device_mb=device, fps=fps,
                      psnr_vs_level0=None if level == 0 else psnr, budget_mb=None, budget_exceeded=False,
                      weights=memory.standins.STANDIN_LABEL, frames=24, seconds=20.0, exit_code=exit_code,
                      error=None if exit_code == 0 else "CUDA out of memory", models=mix)


def _report(**changes: object) -> gpu.GpuReport:
    """A report of fake measurements in which every check passed."""
    levels = tuple(_row(mix, level, 3000.0 - 500 * level + (800 if "enhance" in mix else 0))
                   for mix in gpu.MIXES for level in memory.LEVELS)
    report = gpu.GpuReport(
        device="NVIDIA H200, 141 GB", frames=24, weights=memory.standins.STANDIN_LABEL,
        doctor=gpu.DoctorCheck(0, ("NVIDIA H200, 141 GB",), "works", "server"), levels=levels,
        limit=gpu.LimitCheck(gpu.GPU_LIMIT, gpu.GPU_LIMIT_MB, _row("swap+enhance", 1, 3100.0)),
        gates=tuple(gpu.gate_rows([{"model": name, "metric": "psnr_db", "value": 52.25, "threshold": 35.0,
                                    "higher_is_better": True, "verdict": "pass"} for name in gpu.GATED], gpu.GATED)),
        parity=gpu.ParityCheck(0, "14 passed in 41.20s"), seconds=312.0)
    return replace(report, **changes)


def test_the_table_of_a_passing_run() -> None:
    report = _report()
    text = gpu.table(report)
    lines = text.splitlines()
    assert lines[0].startswith("slimfuse bench gpu: NVIDIA H200, 141 GB; 24 frames of 1280x720")
    assert "doctor (exit 0): NVIDIA H200, 141 GB; cuda works; recommended profile server" in lines
    start = lines.index("| models | level | peak device MB | peak RSS MB | frames/s | PSNR vs level 0 dB |") + 2
    rows = lines[start:start + 9]
    assert rows[8] == "" and all(row.startswith("| inswapper_128") for row in rows[:8])
    assert rows[0] == "| inswapper_128 | 0 | 3000 | 1400 | 9.50 | (reference) |"
    assert rows[7] == "| inswapper_128 + gfpgan_1.4 | 3 | 2300 | 1100 | 9.50 | 48.2 |"
    assert any(line.startswith("--execution-gpu-memory-limit 3.5G (swap+enhance, level 1): peak device 3100 MB of "
                               "at most 3584 MB: holds") for line in lines)
    assert "| gfpgan_1.4 | psnr_db | 52.25 | >= 35 | pass |" in lines
    assert "parity (pytest tests/parity, SLIMFUSE_PARITY_PROVIDER=cuda): exit 0: 14 passed in 41.20s" in lines
    assert lines[-1] == "verdict: every check passed" and report.passed


def test_the_table_and_json_name_every_failure() -> None:
    levels = list(_report().levels)
    levels[2] = _row("swap", 2, None, fps=None, exit_code=17)
    gates = gpu.gate_rows([{"model": "inswapper_128", "metric": "psnr_db", "value": 31.0, "threshold": 35.0,
                            "higher_is_better": True, "verdict": "fail"}], gpu.GATED, "ModelLoadError: no kernel")
    report = _report(levels=tuple(levels), gates=tuple(gates),
                     limit=gpu.LimitCheck(gpu.GPU_LIMIT, gpu.GPU_LIMIT_MB, _row("swap+enhance", 1, 3700.0)),
                     parity=gpu.ParityCheck(1, "1 failed, 13 passed in 40.00s"))
    text = gpu.table(report)
    assert "| inswapper_128 | 2 | - | 1200 | failed (exit 17): CUDA out of memory | 48.2 |" in text
    assert "peak device 3700 MB of at most 3584 MB: DOES NOT HOLD" in text
    assert "| inswapper_128 | psnr_db | 31 | >= 35 | fail |" in text
    assert "| arcface_w600k_r50 | - | - | - | error: ModelLoadError: no kernel |" in text
    assert text.splitlines()[-1] == ("verdict: FAILED: swap level 2 (exit 17); --execution-gpu-memory-limit 3.5G; "
                                     "arcface_w600k_r50.fp16 gate; inswapper_128.fp16 gate; gfpgan_1.4.fp16 gate; "
                                     "parity tests")
    document = json.loads(json.dumps(gpu.document(report), allow_nan=False))
    assert document["passed"] is False and document["gpu_memory_limit"]["passed"] is False
    assert document["gpu_memory_limit"]["peak_device_mb"] == 3700.0
    assert [gate["passed"] for gate in document["fp16_gates"]] == [False, False, False]
    assert document["parity"]["env"] == {"SLIMFUSE_PARITY_PROVIDER": "cuda"}
    assert len(document["levels"]) == 8 and document["levels"][2]["exit_code"] == 17


def test_a_limit_run_without_a_device_reading_does_not_hold() -> None:
    check = gpu.LimitCheck(gpu.GPU_LIMIT, gpu.GPU_LIMIT_MB, _row("swap+enhance", 1, None))
    assert not check.passed  # the limit cannot be said to hold when nothing was measured


def test_doctors_json_is_read_here_where_cuda_does_not_work() -> None:
    done = subprocess.run([sys.executable, "-m", "slimfuse", "doctor", "--execution-provider", "cuda", "--json"],
                          capture_output=True, text=True, check=False)
    check = gpu.doctor_check(done.returncode, done.stdout)
    if NO_CUDA:
        assert check.exit_code == 17 and check.provider_state.startswith("unusable (") and not check.passed
        assert check.recommended_profile == "cpu"
    else:
        assert check.provider_state == "works" and check.passed
    assert not gpu.doctor_check(0, "slimfuse: not JSON").passed


def _parity_checkout(root: Path, tests: dict[str, str]) -> Path:
    folder = root / "tests" / "parity"
    folder.mkdir(parents=True)
    for name, text in tests.items():
        (folder / name).write_text(text, encoding="utf-8")
    return root


def test_the_parity_tests_run_with_the_provider_selected(tmp_path: Path) -> None:
    honours = "import os\n\ndef test_provider():\n    assert os.environ['SLIMFUSE_PARITY_PROVIDER'] == 'cuda'\n"
    check = gpu.run_parity(_parity_checkout(tmp_path / "good", {"test_provider.py": honours}))
    assert check.exit_code == 0 and "1 passed" in check.summary and check.passed
    failing = "def test_stage():\n    assert 30.0 >= 40.0\n"
    check = gpu.run_parity(_parity_checkout(tmp_path / "bad", {"test_provider.py": honours, "test_stage.py": failing}))
    assert check.exit_code == 1 and "1 failed, 1 passed" in check.summary and not check.passed
    check = gpu.run_parity(_parity_checkout(tmp_path / "none", {"reference.py": "VALUE = 1\n"}))
    assert check.exit_code == 5 and check.summary.startswith("no parity tests collected") and check.passed
    check = gpu.run_parity(tmp_path / "not-a-checkout")
    assert check.exit_code is None and check.summary.startswith("not run: no tests/parity") and check.passed
    check = gpu.run_parity(_parity_checkout(tmp_path / "slow", {"test_slow.py": "import time\n\ndef test_slow():\n"
                                                                "    time.sleep(30)\n"}), timeout=3)
    assert check.exit_code is None and check.summary == "timed out after 3 s" and not check.passed


@pytest.mark.slow  # the whole script: variants, gates, nine runs in fresh processes, the parity tests
def test_the_whole_script_rehearsed_on_the_cpu(tmp_path: Path, store: Store,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    user = nm.isolated_store(tmp_path / "user", store)
    honours = "import os\n\ndef test_provider():\n    assert os.environ['SLIMFUSE_PARITY_PROVIDER'] == 'cpu'\n"
    json_path = tmp_path / "gpu.json"
    report = gpu.run(frames=3, json_path=json_path, store=user, notify=lambda message: None, provider="cpu",
                     width=1 / 16, parity_root=_parity_checkout(tmp_path / "checkout", {"test_provider.py": honours}))
    assert report.device == "cpu (no device memory)" and report.doctor.passed
    assert [(row.models, row.level, row.exit_code) for row in report.levels] == [
        (mix, level, 0) for mix in gpu.MIXES for level in memory.LEVELS]
    assert all(row.fps and row.fps > 0 for row in report.levels)
    assert all(row.psnr_vs_level0 is not None for row in report.levels if row.level in (1, 2))
    assert report.limit.row.exit_code == 0 and report.limit.row.level == gpu.LIMIT_LEVEL
    assert not report.limit.passed  # no device memory is read on the CPU, so the limit is not shown to hold
    assert [gate.model for gate in report.gates] == list(gpu.GATED)
    assert all(gate.error is None and gate.metric is not None for gate in report.gates), report.gates
    assert report.parity.exit_code == 0 and "1 passed" in report.parity.summary
    assert report.failures() == ["--execution-gpu-memory-limit 3.5G"] + [
        f"{gate.model}.fp16 gate" for gate in report.gates if not gate.passed]
    document = json.loads(json_path.read_text())
    assert document["execution_provider"] == "cpu" and len(document["levels"]) == 8
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("verdict: FAILED: --execution-gpu-memory-limit")

"""`slimfuse doctor`: hardware, providers that really start, the recommended profile, and a clear failure with
the fix for a requested provider that cannot work."""
from __future__ import annotations

import json

import pytest

from memory.test_probe import FakeNvml
from slimfuse.cli.doctor import diagnose, render
from slimfuse.cli.main import main
from slimfuse.errors import ProviderUnavailableError
from slimfuse.models.providers import PROVIDERS
from slimfuse.models.runtime import available_providers


def test_doctor_reports_hardware_providers_and_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "CPU:" in out and "RAM:" in out and "  cpu: works" in out and "Recommended profile: " in out


def test_doctor_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    cpu = next(check for check in found["providers"] if check["provider"] == "cpu")
    assert cpu["works"] and found["system"]["logical_cores"] >= 1 and found["recommended_profile"] in (
        "cpu", "low-vram-4g", "vram-6g", "vram-8g", "server", "jetson")


def test_a_gpu_seen_through_nvml_is_listed() -> None:
    found = diagnose(nvml=FakeNvml())
    assert found["gpus"][0]["name"] == "NVIDIA GeForce GTX 1650" and found["nvml"] == "ok"
    assert "GPU 0: NVIDIA GeForce GTX 1650, 4.0 GB total, 3.0 GB free" in render(found)
    cuda_works = any(check["provider"] == "cuda" and check["works"] for check in found["providers"])
    assert found["recommended_profile"] == ("low-vram-4g" if cuda_works else "cpu")


@pytest.mark.skipif(PROVIDERS["cuda"] in available_providers(), reason="this onnxruntime has CUDA")
def test_an_unusable_requested_provider_exits_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--execution-provider", "cuda"]) == ProviderUnavailableError.exit_code
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("slimfuse: CUDA execution provider unusable (not in this")
    assert "fix: pip uninstall -y onnxruntime && pip install onnxruntime-gpu==" in lines[0]
    assert "  cuda: unusable" in captured.out

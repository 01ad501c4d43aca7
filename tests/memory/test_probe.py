"""The memory and hardware probes, with a fake NVML (no GPU here) and a fake / for the Jetson check."""
from __future__ import annotations

import mmap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from slimfuse.memory import probe


class FakeNvml:
    """The pynvml functions probe.gpus uses, for one 4 GB card."""

    def __init__(self, fail_init: bool = False) -> None:
        self.fail_init = fail_init
        self.shutdown = False

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shutdown = True

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:  # noqa: N802
        return b"NVIDIA GeForce GTX 1650"

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:  # noqa: N802
        return SimpleNamespace(total=4 << 30, free=3 << 30, used=1 << 30)


def test_process_and_system_memory() -> None:
    memory = probe.process_memory()
    assert 0 < memory.rss_bytes <= memory.tree_rss_bytes and memory.peak_rss_bytes >= memory.rss_bytes
    system = probe.system_memory()
    assert system.total_bytes >= system.available_bytes > 0 and system.logical_cores >= system.physical_cores >= 1


def test_peak_can_be_reset_for_a_stage() -> None:
    big = bytearray(64 << 20)  # touch 64 MB so the peak is above what is resident after it is freed
    big[::4096] = b"x" * len(big[::4096])
    before = probe.peak_rss_bytes()
    del big
    if not probe.reset_peak_rss():
        pytest.skip("this platform cannot reset the peak")
    assert probe.peak_rss_bytes() < before


def test_the_sampler_sees_a_peak_between_takes_and_starts_again() -> None:
    sampler = probe.PeakSampler(interval=0.005)
    try:
        sampler.take()
        # An anonymous mapping of its own: a bytearray may reuse heap pages already resident after earlier tests
        # (then RSS does not move at all), and this one is returned to the system when it is closed.
        big = mmap.mmap(-1, 96 << 20)
        big[::4096] = b"x" * len(big[::4096])
        time.sleep(0.1)
        big.close()
        time.sleep(0.05)
        first = sampler.take()
        second = sampler.take()
    finally:
        sampler.stop()
    assert first - second > 64 << 20  # the freed 96 MB were seen, then forgotten


def test_gpus_through_an_injected_nvml() -> None:
    nvml = FakeNvml()
    (gpu,) = probe.gpus(nvml) or ()
    assert gpu.name == "NVIDIA GeForce GTX 1650" and gpu.total_bytes == 4 << 30 and gpu.free_bytes == 3 << 30
    assert nvml.shutdown


def test_no_nvml_or_no_driver_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe.gpus(FakeNvml(fail_init=True)) is None
    monkeypatch.setattr(probe, "load_nvml", lambda: None)
    assert probe.gpus() is None


def test_jetson_is_recognized_from_the_platform_files(tmp_path: Path) -> None:
    assert not probe.is_jetson(tmp_path)
    (tmp_path / "proc/device-tree").mkdir(parents=True)
    (tmp_path / "proc/device-tree/model").write_bytes(b"NVIDIA Jetson Orin Nano Developer Kit\x00")
    assert probe.is_jetson(tmp_path)

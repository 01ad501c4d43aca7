"""What memory and hardware there is: the process tree's RSS now and at peak, RAM and cores, and GPUs through NVML.

Each probe is a small function returning a frozen dataclass. NVML (the `pynvml` module of nvidia-ml-py) is imported
only when asked for and is optional: without it, or without an NVIDIA driver, `gpus()` returns None.
"""
from __future__ import annotations

import importlib
import os
import platform
import resource
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

MB = 1 << 20


@dataclass(frozen=True)
class ProcessMemory:
    rss_bytes: int
    """This process now."""
    tree_rss_bytes: int
    """This process and all its children now (an encoder or a helper process counts too)."""
    peak_rss_bytes: int
    """This process's own peak (since it started, or since `reset_peak_rss`)."""


@dataclass(frozen=True)
class SystemMemory:
    total_bytes: int
    available_bytes: int
    logical_cores: int
    physical_cores: int


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    total_bytes: int
    free_bytes: int
    used_bytes: int


def peak_rss_bytes() -> int:
    """This process's own peak resident set size.

    Linux's /proc VmHWM is per address space; getrusage's ru_maxrss survives exec, so a child started from a
    large parent would report the parent's peak instead of its own."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def maxrss_bytes(maxrss: int) -> int:
    """getrusage's ru_maxrss in bytes: macOS counts bytes, Linux kB."""
    return maxrss if platform.system() == "Darwin" else maxrss * 1024


def peak_rss_mb() -> float:
    return peak_rss_bytes() / MB


class PeakSampler:
    """The peak RSS of this process between marks, sampled by a daemon thread every `interval` seconds.

    Stage peaks read this way leave the kernel's own high-water mark (VmHWM, ru_maxrss) alone, so `time -v` and
    other outside tools still see the process's true peak; a spike shorter than the interval may be missed here
    and is still in VmHWM."""

    def __init__(self, interval: float = 0.01) -> None:
        self._interval = interval
        self._peak = _rss_now()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="slimfuse-rss-sampler", daemon=True)
        self._thread.start()

    def take(self) -> int:
        """The peak since the last take (or the start), in bytes, at least the RSS now; starts a new interval."""
        now = _rss_now()
        with self._lock:
            peak, self._peak = max(self._peak, now), now
        return peak

    def stop(self) -> None:
        self._stopped.set()

    def _sample(self) -> None:
        while not self._stopped.wait(self._interval):
            rss = _rss_now()
            with self._lock:
                self._peak = max(self._peak, rss)


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_now() -> int:
    """This process's RSS in bytes: /proc/self/statm where there is one (cheap enough to sample often)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except OSError:
        return psutil.Process().memory_info().rss


def reset_peak_rss() -> bool:
    """Start a new peak (Linux: VmHWM is reset by writing 5 to clear_refs), so a stage's own peak can be read;
    False where the platform cannot (the peak then stays the peak since the start)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def process_memory() -> ProcessMemory:
    """This process's RSS, and its tree's from the same reading of its own (read twice, the two could disagree)."""
    me = psutil.Process()
    rss = me.memory_info().rss
    return ProcessMemory(rss_bytes=rss, tree_rss_bytes=rss + _descendants_rss(me),
                         peak_rss_bytes=max(peak_rss_bytes(), rss))


def tree_rss_bytes(pid: int | None = None) -> int:
    """The RSS of process `pid` (default: this one) and all its descendants now, in bytes (0 once it has ended)."""
    try:
        root = psutil.Process(pid)
        return root.memory_info().rss + _descendants_rss(root)
    except psutil.Error:
        return 0


def _descendants_rss(root: psutil.Process) -> int:
    try:
        children = root.children(recursive=True)
    except psutil.Error:
        return 0
    total = 0
    for child in children:
        try:
            total += child.memory_info().rss
        except psutil.Error:  # it ended between listing and asking
            continue
    return total


def system_memory() -> SystemMemory:
    memory = psutil.virtual_memory()
    logical = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    return SystemMemory(total_bytes=memory.total, available_bytes=memory.available, logical_cores=logical,
                        physical_cores=psutil.cpu_count(logical=False) or logical)


def load_nvml() -> Any | None:
    """The pynvml module (from nvidia-ml-py), or None when it is not installed."""
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def gpus(nvml: Any | None = None) -> tuple[GpuInfo, ...] | None:
    """The NVIDIA GPUs NVML sees, or None when NVML is absent or cannot start (no driver). `nvml` is the pynvml
    module, or an object with the same functions (tests inject one)."""
    nvml = nvml if nvml is not None else load_nvml()
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # noqa: BLE001 - NVMLError and friends: no usable driver
        return None
    try:
        found = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            found.append(GpuInfo(index=index, name=name.decode() if isinstance(name, bytes) else str(name),
                                 total_bytes=int(memory.total), free_bytes=int(memory.free),
                                 used_bytes=int(memory.used)))
        return tuple(found)
    except Exception:  # noqa: BLE001 - a driver that answers nvmlInit but not the queries
        return None
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def is_jetson(root: Path = Path("/")) -> bool:
    """An NVIDIA Jetson board (L4T): its release file, or the device tree's model name, says so."""
    if (root / "etc/nv_tegra_release").exists():
        return True
    model = root / "proc/device-tree/model"
    try:
        return "jetson" in model.read_bytes().decode(errors="replace").lower()
    except OSError:
        return False

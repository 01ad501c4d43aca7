"""--system-memory-limit: a hard cap on the process's memory, and allocation failures under it as one clear error.

Linux: RLIMIT_DATA (private writable memory: the heap, anonymous mappings, thread stacks). RLIMIT_AS would also
count address space that is only reserved (glibc's per-thread malloc arenas, CUDA's unified address space): a
swap with a 0.2 GB peak RSS needed an AS limit of 1 GB but runs under a DATA limit of 0.6 GB.
macOS: RLIMIT_DATA is set, but the kernel does not enforce it for mmap, which large allocations use.
Windows: a job object with a per-process committed-memory limit (written to the documented API, untested here).
"""
from __future__ import annotations

import platform
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from slimfuse.errors import SystemMemoryLimitError, is_allocation_failure

GB = 1 << 30

def mechanism() -> str:
    """How this platform enforces the limit, for messages and the run report."""
    system = platform.system()
    if system == "Windows":
        return "job object (process memory limit)"
    if system == "Darwin":
        return "RLIMIT_DATA (not enforced by macOS for mmap allocations)"
    return "RLIMIT_DATA"


@contextmanager
def system_memory_limit(limit_bytes: int | None) -> Iterator[None]:
    """Cap the process at `limit_bytes` for the block (None: no cap); an allocation that fails under the cap
    becomes SystemMemoryLimitError. The cap is lifted again on the way out, so the error can still be reported."""
    if limit_bytes is None:
        yield
        return
    lift = _apply(limit_bytes)
    try:
        yield
    except BaseException as error:
        lift()
        if isinstance(error, Exception) and is_allocation_failure(error):
            raise SystemMemoryLimitError(detail=(
                f"out of memory under --system-memory-limit {limit_bytes / GB:g} GB ({mechanism()}); "
                "raise the limit or lower the run's memory (e.g. --target-face-size)")) from error
        raise
    finally:
        lift()


def _apply(limit_bytes: int) -> Callable[[], None]:
    if platform.system() == "Windows":
        return _windows_job_limit(limit_bytes)
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    capped = limit_bytes if hard == resource.RLIM_INFINITY else min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (capped, hard))
    return lambda: resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _windows_job_limit(limit_bytes: int) -> Callable[[], None]:  # pragma: no cover - Windows only, untested here
    """Put this process in a job object whose per-process commit limit is `limit_bytes`."""
    import ctypes
    from ctypes import wintypes

    class Basic(ctypes.Structure):
        _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                    ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                    ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                    ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD),
                    ("SchedulingClass", wintypes.DWORD)]

    class IoCounters(ctypes.Structure):
        _fields_ = [(name, ctypes.c_ulonglong) for name in (
            "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
            "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]

    class Extended(ctypes.Structure):
        _fields_ = [("BasicLimitInformation", Basic), ("IoInfo", IoCounters),
                    ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                    ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]

    limit_process_memory, extended_information = 0x100, 9
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.CreateJobObjectW.restype = wintypes.HANDLE
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    job = kernel32.CreateJobObjectW(None, None)
    info = Extended()

    def set_limit(flags: int) -> None:
        info.BasicLimitInformation.LimitFlags = flags
        info.ProcessMemoryLimit = limit_bytes
        if not kernel32.SetInformationJobObject(job, extended_information, ctypes.byref(info), ctypes.sizeof(info)):
            raise OSError(ctypes.get_last_error(), "SetInformationJobObject failed")  # type: ignore[attr-defined]

    set_limit(limit_process_memory)
    if not kernel32.AssignProcessToJobObject(job, kernel32.GetCurrentProcess()):
        raise OSError(ctypes.get_last_error(), "AssignProcessToJobObject failed")  # type: ignore[attr-defined]
    return lambda: set_limit(0)

"""Peak memory of the current process, for the benchmarks."""
from __future__ import annotations

import resource
from pathlib import Path


def peak_rss_mb() -> float:
    """This process's own peak resident set size in MB.

    Linux's /proc VmHWM is per address space; getrusage's ru_maxrss survives exec, so a child started from a
    large parent would report the parent's peak instead of its own.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

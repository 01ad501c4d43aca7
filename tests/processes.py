"""Waiting on a running slimfuse process for an event (a file, a line, a library loaded) instead of sleeping: on two
busy cores a fixed sleep lands anywhere in a run."""
from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

PATIENCE_S = 120.0


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[str], what: str) -> None:
    """Poll `condition` until it holds; fail if the process ends first or nothing happens for PATIENCE_S."""
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        assert process.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {PATIENCE_S:.0f} s"
        time.sleep(0.005)


def read_until(lines: Iterable[str], marker: str) -> bool:
    """Read a process's output up to the first line holding `marker` (False at its end)."""
    return any(marker in line for line in lines)


def catches_sigterm(pid: int) -> bool:
    """slimfuse's signal handling is in place: Python alone never catches SIGTERM (SigCgt: the caught signals)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def has_loaded(pid: int, library: str) -> bool:
    return library in Path(f"/proc/{pid}/maps").read_text()

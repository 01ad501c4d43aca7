"""--system-memory-limit in a fresh process: a limit a real swap cannot fit fails cleanly with its exit code and no
output; a generous one changes nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slimfuse.errors import SystemMemoryLimitError
from slimfuse.memory.limit import is_allocation_failure


def _swap(source: Path, target: Path, output: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slimfuse", "swap", "-s", str(source), "-t", str(target),
                           "-o", str(output), *options], capture_output=True, text=True, timeout=300,
                          env=os.environ.copy())


def test_allocation_failures_are_recognized() -> None:
    assert is_allocation_failure(MemoryError())
    assert is_allocation_failure(RuntimeError("pthread_create failed, error code: 12 error msg: Cannot allocate memory"))
    assert is_allocation_failure(RuntimeError("std::bad_alloc"))
    try:
        try:
            raise MemoryError
        except MemoryError as inner:
            raise ValueError("decoding failed") from inner
    except ValueError as outer:
        assert is_allocation_failure(outer)
    assert not is_allocation_failure(ValueError("not an image"))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced by Linux")
def test_a_limit_the_swap_cannot_fit_fails_cleanly(tmp_path: Path, astronaut_path: Path,
                                                    grace_hopper_path: Path) -> None:
    output, report = tmp_path / "out" / "result.jpg", tmp_path / "run.json"
    output.parent.mkdir()
    done = _swap(astronaut_path, grace_hopper_path, output, "--system-memory-limit", "0.2", "--report", str(report))
    assert done.returncode == SystemMemoryLimitError.exit_code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("slimfuse: out of memory under --system-memory-limit 0.2 GB")
    assert done.stdout == "" and list(output.parent.iterdir()) == []
    error = json.loads(report.read_text())["error"]
    assert error["exit_code"] == SystemMemoryLimitError.exit_code and error["type"] == "SystemMemoryLimitError"


def test_a_generous_limit_changes_nothing(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path) -> None:
    output = tmp_path / "result.jpg"
    done = _swap(astronaut_path, grace_hopper_path, output, "--system-memory-limit", "4")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(output) and output.stat().st_size > 0

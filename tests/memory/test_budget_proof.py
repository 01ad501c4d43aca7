"""The budget holds: `slimfuse swap --memory-budget 400 --execution-provider cpu` on a 720p clip keeps the whole
process under 400 MB RSS (its peak, as the kernel counts it: the run report's VmHWM per stage, read inside the
process; the wait4 figure of a child counts the memory of the parent it was forked from), and a budget below what
the job needs is refused before any work."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from slimfuse.bench.clips import make_clip, pan
from slimfuse.errors import MemoryBudgetError



@pytest.fixture(scope="module")
def clip_720p(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    return make_clip(tmp_path_factory.mktemp("clip") / "pan720.mp4", pan(grace_hopper, (1280, 720), 60), fps=25)


@pytest.mark.skipif(sys.platform != "linux", reason="the peak of each stage needs Linux's resettable VmHWM")
@pytest.mark.parametrize("budget_mb", [400, 360])
def test_a_720p_swap_stays_within_its_budget(tmp_path: Path, clip_720p: Path, astronaut_path: Path,
                                             budget_mb: int) -> None:
    output, report = tmp_path / "out.mp4", tmp_path / "run.json"
    done = subprocess.run([sys.executable, "-m", "slimfuse", "swap", "-s", str(astronaut_path), "-t", str(clip_720p),
                           "-o", str(output), "--memory-budget", str(budget_mb), "--execution-provider", "cpu",
                           "--report", str(report), "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and output.stat().st_size > 0, done.stderr
    run = json.loads(report.read_text())
    assert run["results"]["frames_written"] == 60 and run["results"]["frames_with_faces"] == 60
    assert run["peak_per_stage"] and [stage["stage"] for stage in run["stages"]] == ["models", "sources", "processing",
                                                                                    "write"]
    peak = max(max(stage["peak_rss_mb"], stage["tree_rss_mb"]) for stage in run["stages"])
    assert peak < budget_mb, f"peak RSS {peak:.0f} MB over the {budget_mb} MB budget ({run['memory_plan']})"


def test_a_budget_below_the_jobs_minimum_is_refused_before_any_work(tmp_path: Path, clip_720p: Path,
                                                                     astronaut_path: Path) -> None:
    output = tmp_path / "out.mp4"
    done = subprocess.run([sys.executable, "-m", "slimfuse", "swap", "-s", str(astronaut_path), "-t", str(clip_720p),
                           "-o", str(output), "--memory-budget", "200"], capture_output=True, text=True, timeout=120)
    assert done.returncode == MemoryBudgetError.exit_code and not output.exists()
    assert done.stderr.startswith("slimfuse: --memory-budget 200 MB is too small for this job: it needs at least ")

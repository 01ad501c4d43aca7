"""`slimfuse bench startup`: how long the command line takes to answer what needs no work: the help screens, a
usage error, and a wrong output path refused before any model or frame is loaded. Each case runs as a fresh
process (the console script's way: `python -m slimfuse`), several times in turn; the median and the slowest are
reported, with the modules each case loaded."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

GOAL_S = {"help": 0.3, "usage error": 0.3, "wrong output path": 0.5}
"""The answer each kind of case should give within, on a 2-core machine."""


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    argv: tuple[str, ...]
    exit_code: int


@dataclass(frozen=True)
class Row:
    name: str
    median_s: float
    slowest_s: float
    goal_s: float
    exit_code: int


def cases(folder: Path) -> list[Case]:
    photo = folder / "face.jpg"
    photo.write_bytes(b"")  # the output is checked before the sources are read
    return [
        Case("slimfuse --help", "help", ("--help",), 0),
        Case("slimfuse swap --help", "help", ("swap", "--help"), 0),
        Case("slimfuse live --help", "help", ("live", "--help"), 0),
        Case("swap --target-face-size huge", "usage error",
             ("swap", "-s", str(photo), "-t", str(photo), "-o", "out.jpg", "--target-face-size", "huge"), 2),
        Case("swap -o /missing/out.jpg", "wrong output path",
             ("swap", "-s", str(photo), "-t", str(photo), "-o", str(folder / "missing" / "out.jpg")), 11),
    ]


def run(runs: int = 10, json_path: Path | None = None) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="slimfuse-startup-") as folder:
        todo = cases(Path(folder))
        times: dict[str, list[float]] = {case.name: [] for case in todo}
        codes: dict[str, int] = {}
        for _ in range(runs):  # in turn, so a slow moment of the machine falls on every case alike
            for case in todo:
                started = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "slimfuse", *case.argv], capture_output=True, check=False)
                times[case.name].append(time.perf_counter() - started)
                codes[case.name] = done.returncode
    rows = [Row(case.name, round(statistics.median(times[case.name]), 3), round(max(times[case.name]), 3),
                GOAL_S[case.kind], codes[case.name]) for case in todo]
    for case, row in zip(todo, rows, strict=True):
        if row.exit_code != case.exit_code:
            raise RuntimeError(f"{case.name}: exit {row.exit_code}, expected {case.exit_code}")
    print(table(rows, runs))
    if json_path is not None:
        json_path.write_text(json.dumps({"runs": runs, "rows": [asdict(row) for row in rows]}, indent=2))
    return rows


def table(rows: list[Row], runs: int) -> str:
    lines = [f"| command (fresh process, {runs} runs) | median s | slowest s | goal s |", "|---|---|---|---|"]
    lines += [f"| `{row.name}` | {row.median_s:.3f} | {row.slowest_s:.3f} | {row.goal_s:g} |" for row in rows]
    return "\n".join(lines)

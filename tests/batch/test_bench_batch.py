"""`slimfuse bench batch` on a tiny job: its rows, the join's share, PSNR at the joins and the projection."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from slimfuse.cli.main import main


def test_the_batch_benchmark_measures_split_join_and_projection(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    assert main(["bench", "batch", "--images", "2", "--seconds", "3", "--no-ray", "--json", str(report),
                 "--plot", str(tmp_path / "bench.png")]) == 0
    table = capsys.readouterr().out
    assert "| --workers 2 (processes) |" in table and "projected x4 / x16 / x64" in table
    rows = {row["run"]: row for row in json.loads(report.read_text())["rows"]}
    assert set(rows) == {"transcode (decode + encode only)", "one process, in sequence", "--workers 2 (processes)"}
    split = rows["--workers 2 (processes)"]
    assert split["frames"] == rows["one process, in sequence"]["frames"] == 75
    assert split["segments"] == 2 and split["join"] == "copied" and 0 < split["join_share"] < 1
    assert split["psnr_min_at_joins"] is not None and split["psnr_min"] > 30
    speedups = [split["projected_speedup"][key] for key in ("1", "2", "4", "16", "64")]
    assert speedups[0] == 1.0 and speedups == sorted(speedups)
    assert (tmp_path / "bench.png").stat().st_size > 0

"""`slimfuse bench live` at a short length: both sizes measured, the soak sampled, the JSON and the plot written
(the full 10-minute soak runs only in the benchmark itself)."""
from __future__ import annotations

import json
from pathlib import Path

from slimfuse.bench import live


def test_the_live_bench_measures_both_sizes_and_a_short_soak(tmp_path: Path) -> None:
    rows, soaked = live.run(seconds=2.5, soak_seconds=6.0, json_path=tmp_path / "live.json",
                            plot_path=tmp_path / "live.png", soak_every=1.0)
    assert [row.size for row in rows] == ["640x480", "1280x720"]
    for row in rows:
        assert row.processed_fps > 1 and row.input_frames >= 50  # 2.5 s of a 30 fps camera
        assert row.latency_p50_ms is not None and row.latency_p95_ms is not None
        assert row.latency_p50_ms <= row.latency_p95_ms < 2000
    assert soaked is not None and len(soaked.samples) >= 4
    assert soaked.rss_end_mb > 50 and "RSS" in soaked.verdict
    data = json.loads((tmp_path / "live.json").read_text())
    assert sum(data["histograms_ms"]["640x480"]) > 0 and data["soak"]["seconds"] == 6.0
    assert (tmp_path / "live.png").stat().st_size > 10_000

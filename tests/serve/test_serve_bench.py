"""`slimfuse bench serve` on a few images: every row measured, the ratio taken against the command line."""
from __future__ import annotations

import json
from pathlib import Path

from slimfuse.bench import serve


def test_bench_serve_measures_service_and_command_line(tmp_path: Path) -> None:
    results = serve.run(images=2, users=(1, 2), workers=1, memory_budget=800, json_path=tmp_path / "serve.json")
    service, cli = results.rows[:-1], results.rows[-1]
    assert [row.users for row in service] == [1, 2] and cli.users is None
    assert all(row.images == 2 and row.images_per_minute > 0 and row.latency_p50_ms > 0 for row in results.rows)
    assert all(row.status_calls > 0 and row.status_p95_ms is not None for row in service)
    assert 0 < results.peak_rss_mb <= 800
    assert results.overhead_ratio == round(service[1].images_per_minute / cli.images_per_minute, 2)
    assert json.loads((tmp_path / "serve.json").read_text())["rows"][0]["run"] == "service, 1 user"


def test_the_open_loop_load_lets_users_arrive_on_time_and_loses_no_job(tmp_path: Path) -> None:
    from slimfuse.bench import serve_load

    rows = serve_load.run(users=4, seconds=2.0, workers=1, ray=False, json_path=tmp_path / "load.json",
                          plot_path=tmp_path / "load.png")
    (row,) = rows
    assert (row.succeeded, row.failed, row.lost) == (4, 0, 0) and row.seconds >= 1.5  # the last arrived at 1.5 s
    assert row.latency_p50_s <= row.latency_p95_s and row.peak_memory_mb > 100
    data = json.loads((tmp_path / "load.json").read_text())
    assert [user["arrived"] for user in data["latencies"][row.run]] == [0.0, 0.5, 1.0, 1.5]
    assert (tmp_path / "load.png").stat().st_size > 10_000

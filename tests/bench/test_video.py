"""`slimfuse bench video`: rounds of fresh processes on a clip made from the packaged photo, and how a variant's
runs become one row (medians, and the ratio to the same round's transcode)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from slimfuse.bench import video


def _row(name: str, fps: float, setup: float | None = None) -> video.Row:
    frames = 100
    return video.Row(name, frames, frames / fps, fps, 300.0 + fps, None, None, None, setup_seconds=setup)


def test_a_variant_s_ratio_is_the_median_of_its_ratios_to_the_same_round_s_transcode() -> None:
    transcodes = [_row("transcode", fps) for fps in (50.0, 100.0, 60.0)]
    swaps = [_row("swap", fps, setup) for fps, setup in ((30.0, 0.2), (45.0, 0.1), (40.0, 0.3))]
    row = video.summarise(swaps, transcodes, psnr_vs_default=None)
    # Per round 0.6, 0.45 and 0.667: the median is 0.6, where the medians' own ratio (40 / 60) would claim 0.667.
    assert row.fps_ratio_vs_transcode == pytest.approx(0.6)
    assert row.fps_ratio_range == pytest.approx((0.45, 40.0 / 60.0))
    assert row.fps == 40.0
    assert row.seconds == pytest.approx(100 / 40.0)
    assert row.setup_seconds == pytest.approx(0.2)
    assert row.peak_rss_mb == pytest.approx(345.0)  # the largest of the rounds
    one = video.summarise(swaps[:1], transcodes[:1], psnr_vs_default=None)
    assert one.fps_ratio_vs_transcode == pytest.approx(0.6) and one.fps_ratio_range is None
    assert "0.60 (0.45-0.67)" in video.markdown_table([row], 100, rounds=3)


def test_rounds_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="rounds"):
        video.run(frames=4, rounds=0)


def test_two_rounds_of_the_transcode_and_the_default_swap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "bench.json"
    rows = video.run(frames=6, json_path=report, rounds=2, variants=video.VARIANTS[:2])
    transcode, swap = rows
    assert transcode.fps_ratio_vs_transcode == 1.0
    assert swap.frames == 6 and swap.generated == 6 and swap.detections is not None and swap.detections >= 1
    assert swap.fps > 0 and swap.setup_seconds is not None
    low, high = swap.fps_ratio_range or (0.0, 0.0)
    assert 0 < low <= swap.fps_ratio_vs_transcode <= high
    saved = json.loads(report.read_text())
    assert saved["rounds"] == 2 and [row["variant"] for row in saved["rows"]] == [row.variant for row in rows]
    assert "medians of 2 rounds" in capsys.readouterr().out

"""A long video in keyframe segments on two worker processes, joined by copying packets: the input's frame count,
timestamps, duration and audio, and the same pictures as the single-process output, joins included."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from batch_media import CLIP_FRAMES, CLIP_GOP, audio_packets, duration, segment_clip, video_frames
from slimfuse.batch.segments import plan_segments, scan_keyframes, with_warmup
from slimfuse.cli.main import main
from slimfuse.metrics import psnr
from processes import wait_for

# Both runs are encoded losslessly (quality 100), so what differs is the swap alone: the first segment is the same
# frames, and a later segment's tracks start from its warm-up frames rather than the whole video, which leaves
# its faces within a fraction of a grey level (about 46-60 dB; the goal is 40).
MIN_PSNR_DB = 40.0
LOSSLESS = ["--output-video-quality", "100"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    return segment_clip(tmp_path_factory.mktemp("clip") / "pan.mp4", grace_hopper)


def test_segments_are_cut_at_keyframes(clip: Path) -> None:
    keyframes = scan_keyframes(clip)
    assert keyframes.frames == CLIP_FRAMES
    assert [index for index, _ in keyframes.keyframes] == list(range(0, CLIP_FRAMES, CLIP_GOP))
    spans = plan_segments(keyframes, pieces=2)
    assert [span.start_index for span in spans] == [0, 60]
    assert spans[0].end_pts == spans[1].start_pts and spans[1].end_pts is None
    warmed = with_warmup(plan_segments(keyframes, pieces=4), keyframes, frames=12, interval=5)
    assert [(span.start_index, span.warmup) for span in warmed] == [(0, 0), (30, 12), (60, 12), (90, 12)]
    assert [span.warmup_pts for span in warmed[1:]] == [keyframes.stamps[18], keyframes.stamps[48],
                                                        keyframes.stamps[78]]


def test_workers_join_a_video_as_one_process_writes_it(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       clip: Path, astronaut_path: Path) -> None:
    single, split = tmp_path / "single.mp4", tmp_path / "split.mp4"
    assert main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(single), "--quiet", *LOSSLESS]) == 0
    report = tmp_path / "report.json"
    code = main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(split), "--workers", "2",
                 "--report", str(report), *LOSSLESS])
    stderr = capsys.readouterr().err
    assert code == 0, stderr
    (row,) = json.loads(report.read_text())["items"]
    assert row["segments"] == 4 and row["join"] == "copied" and row["frames"] == CLIP_FRAMES
    assert "4 segments, join copied" in stderr

    source_pts, _ = video_frames(clip)
    single_pts, single_frames = video_frames(single)
    split_pts, split_frames = video_frames(split)
    assert split_pts == single_pts == source_pts
    assert duration(split) == pytest.approx(duration(clip), abs=1e-6)
    assert audio_packets(split) == audio_packets(clip)
    first = scan_keyframes(clip).keyframes[1][0]  # where the second segment starts
    differing = [(index, round(psnr(a, b), 1), int(np.abs(a.astype(np.int16) - b).max()))
                 for index, (a, b) in enumerate(zip(single_frames[:first], split_frames[:first], strict=True))
                 if not np.array_equal(a, b)]
    assert not differing, f"first segment's frames differ (frame, dB, max levels): {differing}"
    quality = [psnr(a, b) for a, b in zip(single_frames, split_frames, strict=True)]
    assert min(quality) >= MIN_PSNR_DB, [round(value, 1) for value in quality]
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == [".slimfuse-batch.jsonl"]


def test_ctrl_c_mid_segment_leaves_no_output(tmp_path: Path, clip: Path, astronaut_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    process = subprocess.Popen([sys.executable, "-m", "slimfuse", "swap", "-s", str(astronaut_path), "-t", str(clip),
                                "-o", str(out / "pan.mp4"), "--workers", "2"], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for(lambda: any(out.glob(".slimfuse-segments-*/.*/.segment-*.part")), process, "a segment being written")
        os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C does: the whole process group
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "slimfuse: interrupted; no output was written", stderr
    assert "Traceback" not in stderr
    assert list(out.iterdir()) == []

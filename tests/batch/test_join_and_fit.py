"""The join's fallback when segments were encoded differently, and how many workers a memory budget holds."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from batch_media import CLIP_FRAMES, audio_packets, segment_clip, video_frames
from slimfuse.batch.runner import fit_workers
from slimfuse.batch.segments import join_segments, plan_segments, scan_keyframes
from slimfuse.config import RunConfig
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import VideoReader
from slimfuse.media.video_writer import VideoWriter
from slimfuse.pipeline.run import plan_for


def test_segments_encoded_differently_are_reencoded_and_say_so(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    clip = segment_clip(tmp_path / "pan.mp4", grace_hopper)
    info = probe(clip)
    spans = plan_segments(scan_keyframes(clip), pieces=2)
    parts = []
    for number, span in enumerate(spans):  # the second segment with another x264 preset: other stream parameters
        part = tmp_path / f"part{number}.mp4"
        settings = EncodeSettings(preset="veryfast" if number == 0 else "ultrafast", skip_audio=True)
        with VideoReader(clip, info=info, span=span) as reader, VideoWriter(part, info, settings) as writer:
            for frame in reader:
                writer.write(frame)
        parts.append(part)
    notices: list[str] = []
    output = tmp_path / "joined.mp4"
    joined = join_segments(info, spans, parts, output, EncodeSettings(), None, notices.append)
    assert not joined.copied and joined.frames == CLIP_FRAMES
    assert len(notices) == 1 and "re-encoding them into one video" in notices[0]
    assert video_frames(output)[0] == video_frames(clip)[0]
    assert len(audio_packets(output)) == len(audio_packets(clip))


def test_a_memory_budget_holds_as_many_workers_as_fit(astronaut_path: Path, grace_hopper_path: Path) -> None:
    unbounded = RunConfig.from_options([astronaut_path])
    peak = plan_for(unbounded, grace_hopper_path).memory.estimated_peak_bytes
    config = RunConfig.from_options([astronaut_path], memory_budget=2.5 * peak / (1 << 20))
    notices: list[str] = []
    assert fit_workers(config, grace_hopper_path, 4, notices.append) == 2
    assert len(notices) == 1 and "--workers 4: 2 fit" in notices[0]
    assert fit_workers(unbounded, grace_hopper_path, 4, notices.append) == 4


def test_one_worker_is_not_planned_again(astronaut_path: Path) -> None:
    """One worker is the plain run, which plans (and refuses) its budget itself."""
    config = RunConfig.from_options([astronaut_path], memory_budget=1)
    assert fit_workers(config, None, 1, lambda message: None) == 1

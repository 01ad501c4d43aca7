"""A long video's segments joined with the lip syncer's sound (EncodeSettings.audio_path) instead of the input's:
the sound's own samples from the video's start, cut where the video ends, as the streaming writer does."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from batch_media import segment_clip
from slimfuse.batch.segments import join_segments, plan_segments, scan_keyframes
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import VideoReader
from slimfuse.media.video_writer import VideoWriter
from voices import RATE, buzz, output_sound, write_sound


def test_segments_joined_with_another_sound(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    clip = segment_clip(tmp_path / "pan.mp4", grace_hopper)
    info = probe(clip)
    assert info.duration is not None
    spans = plan_segments(scan_keyframes(clip), pieces=2)
    parts = []
    for number, span in enumerate(spans):
        part = tmp_path / f"part{number}.mp4"
        with VideoReader(clip, info=info, span=span) as reader, \
                VideoWriter(part, info, EncodeSettings(skip_audio=True)) as writer:
            for frame in reader:
                writer.write(frame)
        parts.append(part)
    syllables = ((0.2, 0.5, 1.0), (info.duration - 0.6, info.duration - 0.3, 1.0))
    voice = write_sound(tmp_path / "voice.wav", buzz(info.duration + 2.0, syllables))
    output = tmp_path / "joined.mp4"
    settings = replace(EncodeSettings(), audio_path=voice)
    joined = join_segments(info, spans, parts, output, settings, None, lambda message: None)
    assert joined.copied
    sound, start = output_sound(output)
    assert abs(start + sound.size / RATE - info.duration) < 0.05  # cut at the video's end, not the sound's
    loud = np.flatnonzero(np.abs(sound) > 0.05)
    onsets = loud[np.diff(loud, prepend=-RATE) > 0.05 * RATE] / RATE + start
    assert np.allclose(onsets, [begin for begin, _, _ in syllables], atol=0.03), onsets

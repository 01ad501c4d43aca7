"""What the batch tests compare: a video's frames with their timestamps, its audio packets and its duration."""
from __future__ import annotations

from pathlib import Path

import av
import numpy as np

from slimfuse.bench.clips import make_clip, pan

CLIP_SIZE = (320, 240)
CLIP_FRAMES = 120
CLIP_GOP = 30


def segment_clip(path: Path, photo: np.ndarray) -> Path:
    """A 4.8 s pan with audio, a keyframe every 30 frames, and B-frames (x264 veryfast)."""
    return make_clip(path, pan(photo, size=CLIP_SIZE, count=CLIP_FRAMES), fps=25, audio=True, preset="veryfast",
                     gop=CLIP_GOP)


def video_frames(path: Path) -> tuple[list[int], list[np.ndarray]]:
    with av.open(str(path)) as container:
        decoded = [(frame.pts, frame.to_ndarray(format="rgb24")) for frame in container.decode(video=0)]
    return [pts for pts, _ in decoded], [rgb for _, rgb in decoded]


def audio_packets(path: Path) -> list[tuple[int, bytes]]:
    with av.open(str(path)) as container:
        return [(packet.pts, bytes(packet)) for packet in container.demux(audio=0) if packet.size]


def duration(path: Path) -> float:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return float(stream.duration * stream.time_base)


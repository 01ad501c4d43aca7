"""What a video is before any frame is processed: its size (upright), rotation, frame count, rate, time base,
codecs and audio, read with PyAV (which bundles FFmpeg; no ffmpeg binary needed)."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
from av.container import InputContainer
from av.video.stream import VideoStream

from slimfuse.errors import CodecUnavailableError, InputCorruptError, NoFramesError, NoVideoStreamError
from slimfuse.media.image_io import check_readable
from slimfuse.media.video_encoding import container_for


@dataclass(frozen=True)
class VideoInfo:
    """What `probe` learns about a video before any frame is processed.

    width, height: the upright picture (after rotation), as frames come out of the reader.
    rotation: the rotate tag, degrees clockwise the stored picture is turned to show it upright (0/90/180/270).
    frame_count: from the container's index (mp4, mov, avi); None when the container does not say (mkv, webm).
    fps: the average frame rate. time_base: the video stream's, in which frames' pts are counted.
    start_pts: the first frame's pts. duration: seconds of video, None when unknown.
    """

    path: Path
    width: int
    height: int
    rotation: int
    frame_count: int | None
    fps: Fraction
    time_base: Fraction
    start_pts: int
    duration: float | None
    codec: str
    pix_fmt: str
    has_audio: bool
    audio_codec: str | None
    container: str

    @property
    def estimated_frames(self) -> int | None:
        """The frame count, or duration x fps where the container does not count frames (for progress and ETA)."""
        if self.frame_count is not None:
            return self.frame_count
        return None if self.duration is None else max(1, round(self.duration * self.fps))

    @property
    def frame_ticks(self) -> int:
        """One average frame's duration in time_base ticks (at least 1)."""
        return max(1, round(1 / (self.fps * self.time_base)))



def probe(path: Path) -> VideoInfo:
    """Open `path`, check it holds a decodable video stream, and describe it (decodes the first frame only)."""
    path = Path(path)
    check_readable(path)
    container_for(path)
    container = _open_input(path)
    with container:
        stream = _video_stream(path, container)
        first = _first_frame(path, container, stream)
        rotation = (-first.rotation) % 360
        width, height = (first.height, first.width) if rotation in (90, 270) else (first.width, first.height)
        audio = container.streams.audio[0] if container.streams.audio else None
        return VideoInfo(
            path=path, width=width, height=height, rotation=rotation,
            frame_count=stream.frames or None, fps=_frame_rate(stream), time_base=stream.time_base or Fraction(1, 1000),
            start_pts=first.pts if first.pts is not None else 0, duration=_video_duration(container, stream),
            codec=stream.codec_context.name, pix_fmt=first.format.name, has_audio=audio is not None,
            audio_codec=audio.codec_context.name if audio is not None and audio.codec_context else None,
            container=container.format.name,
        )


def _open_input(path: Path) -> InputContainer:
    try:
        return av.open(str(path))
    except (av.FFmpegError, OSError) as exc:
        raise InputCorruptError(path, f"not a readable video (corrupt, truncated, or not a video: {exc})") from exc


def _video_stream(path: Path, container: InputContainer) -> VideoStream:
    if not container.streams.video:
        if container.streams.audio:
            raise NoVideoStreamError(path, "audio-only file: there is no video stream to swap faces in")
        raise NoVideoStreamError(path)
    stream = container.streams.video[0]
    if stream.codec_context is None:
        raise CodecUnavailableError(path, "its video codec has no decoder in this FFmpeg build")
    stream.thread_type = "AUTO"
    return stream


def _first_frame(path: Path, container: InputContainer, stream: VideoStream) -> av.VideoFrame:
    try:
        for frame in container.decode(stream):
            return frame
    except av.FFmpegError as exc:
        raise InputCorruptError(path, f"the first video frame does not decode ({exc})") from exc
    raise NoFramesError(path)


def _frame_rate(stream: VideoStream) -> Fraction:
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if rate and 0 < rate < 1000:
            return Fraction(rate)
    return Fraction(25)


def _video_duration(container: InputContainer, stream: VideoStream) -> float | None:
    """Seconds of video: the stream's own duration, else Matroska's per-track DURATION tag, else the container's
    when the video is its only stream (with audio, the container's may be the audio's)."""
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    tag = stream.metadata.get("DURATION")
    if tag:
        hours, minutes, seconds = tag.split(":")
        return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    if container.duration and len(container.streams) == 1:
        return container.duration / av.time_base
    return None


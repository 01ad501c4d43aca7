"""Live outputs through PyAV: MPEG-TS over UDP, FLV over RTMP, a v4l2 loopback device, or a video file.

Encoded outputs use x264 tuned for zero latency (no B-frames, no look-ahead, a keyframe every second so a viewer
that joins late starts within one). A v4l2 device takes raw YUV 4:2:0 frames; `RawOutput` writes the same frames
to any container format PyAV knows, which is how the tests see what a loopback device would get.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Protocol

import av
import numpy as np

from slimfuse.atomic import check_destination
from slimfuse.errors import LiveOutputError, SlimfuseError

TIME_BASE = Fraction(1, 1000)
"""Output timestamps are the input frames' arrival times, in milliseconds."""
CONTAINERS = {"udp": "mpegts", "rtmp": "flv", "rtmps": "flv", "srt": "mpegts"}


class LiveOutput(Protocol):
    spec: str

    def write(self, rgb: np.ndarray, seconds: float) -> None:
        """One frame, shown `seconds` after the session's start."""

    def close(self) -> None: ...


class _PyAVOutput:
    def __init__(self, spec: str, container_format: str | None, codec: str, size: tuple[int, int], fps: float,
                 options: dict[str, str]) -> None:
        self.spec = spec
        self._last_pts = -1
        try:
            self.container = av.open(spec, mode="w", format=container_format)
            stream = self.container.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
            stream.width, stream.height = size
            stream.pix_fmt = "yuv420p"
            stream.codec_context.time_base = TIME_BASE
            stream.codec_context.options = options
            if codec == "libx264":
                stream.codec_context.gop_size = max(1, round(fps))
            self.stream = stream
        except (av.error.FFmpegError, OSError) as exc:
            raise LiveOutputError(spec, f"cannot open the live output ({exc})") from None

    def write(self, rgb: np.ndarray, seconds: float) -> None:
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        self._last_pts = max(self._last_pts + 1, round(seconds / TIME_BASE))
        frame.pts, frame.time_base = self._last_pts, TIME_BASE
        try:
            self.container.mux(self.stream.encode(frame))
        except (av.error.FFmpegError, OSError) as exc:
            raise LiveOutputError(self.spec, f"the output stopped taking frames ({exc})") from None

    def close(self) -> None:
        try:
            self.container.mux(self.stream.encode(None))
        except (av.error.FFmpegError, OSError):
            pass  # a receiver that went away cannot take the last frames; closing must still release everything
        finally:
            self.container.close()


class EncodedOutput(_PyAVOutput):
    """x264 in MPEG-TS (udp://, srt://, a .ts file) or FLV (rtmp://), or the file's own container."""

    def __init__(self, spec: str, size: tuple[int, int], fps: float) -> None:
        scheme = spec.split("://", 1)[0] if "://" in spec else None
        container_format = CONTAINERS.get(scheme) if scheme else ("mpegts" if spec.endswith(".ts") else None)
        options = {"preset": "ultrafast", "tune": "zerolatency", "crf": "23"}
        super().__init__(spec, container_format, "libx264", _even(size), fps, options)

    def write(self, rgb: np.ndarray, seconds: float) -> None:
        height, width = self.stream.height, self.stream.width
        super().write(rgb[:height, :width], seconds)


class RawOutput(_PyAVOutput):
    """Raw YUV 4:2:0 frames: to a v4l2 device (`container_format="v4l2"`), or to a file in another raw format."""

    def __init__(self, spec: str, size: tuple[int, int], fps: float, container_format: str = "v4l2") -> None:
        super().__init__(spec, container_format, "rawvideo", size, fps, {})


def check_output(spec: str) -> None:
    """What can be checked of an output before the session starts: a file's folder exists and is writable (a URL
    or a device is only known once it is opened)."""
    if "://" in spec or spec.startswith("/dev/video"):
        return
    try:
        check_destination(Path(spec))
    except SlimfuseError as exc:
        raise LiveOutputError(spec, exc.detail or exc.problem) from None


def open_output(spec: str, size: tuple[int, int], fps: float) -> LiveOutput:
    """The output `spec` names: a /dev/video device (v4l2 loopback), a URL (udp://, rtmp://, srt://) or a file."""
    if spec.startswith("/dev/video"):
        return RawOutput(spec, size, fps)
    return EncodedOutput(spec, size, fps)


def _even(size: tuple[int, int]) -> tuple[int, int]:
    """x264 with 4:2:0 needs even sides: an odd one loses its last pixel."""
    return size[0] - size[0] % 2, size[1] - size[1] % 2

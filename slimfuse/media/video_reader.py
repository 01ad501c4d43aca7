"""Decoding a video into frames in its own thread, through a bounded queue, so decoding overlaps processing and
memory holds a few frames whatever the video's length. Frames keep their timestamps (variable frame rate
included) and come out upright (rotation metadata is applied)."""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from types import TracebackType

import av
import numpy as np
from av.container import InputContainer
from av.video.stream import VideoStream

from slimfuse.errors import SlimfuseError, UsageError, VideoDecodeStoppedError
from slimfuse.media.frame_queue import DEFAULT_QUEUE, END, POLL_S, drain
from slimfuse.media.video_probe import VideoInfo, probe

UPSAMPLE_FIRST = {"yuv420p": "yuv444p", "yuv422p": "yuv444p", "nv12": "yuv444p", "yuvj420p": "yuvj444p",
                  "yuvj422p": "yuvj444p"}


@dataclass(frozen=True)
class VideoFrame:
    """One decoded frame: its index in the file (trimmed frames count too), its pts in `time_base` ticks, its
    duration in ticks (0 when the file does not say), and its pixels, HxWx3 RGB uint8, upright."""

    index: int
    pts: int
    time_base: Fraction
    rgb: np.ndarray
    duration: int = 0

    @property
    def time(self) -> float:
        return float(self.pts * self.time_base)

    def with_rgb(self, rgb: np.ndarray) -> VideoFrame:
        return replace(self, rgb=rgb)


@dataclass(frozen=True)
class FrameSpan:
    """A keyframe segment of a video: the frames whose pts lie in [start_pts, end_pts) (end None: to the end),
    the first of them frame `start_index` of the file; start_pts is a keyframe's. warmup: the reader also gives
    the `warmup` frames before it, from `warmup_pts` (indices below start_index), for the tracker to settle."""

    start_index: int
    start_pts: int
    end_pts: int | None
    warmup: int = 0
    warmup_pts: int | None = None

    @property
    def first_pts(self) -> int:
        return self.start_pts if self.warmup_pts is None else self.warmup_pts


class _Stopped(Exception):
    """The consumer closed the reader; the decode thread unwinds."""


class VideoReader:
    """Frames of a video, decoded in a thread into a bounded queue; iterate it, and close it (or use `with`).

    start, end: the frames [start, end) come out (`--trim-frame-start/end`); frames before `start` are decoded but
    not converted. Decoding errors, and a file that ends before its header says, reach the consumer after every
    frame that did decode, as VideoDecodeStoppedError naming the first frame that did not. To keep what decoded,
    catch it inside the writer's `with` block and close() the writer there (leaving the block by the exception
    aborts the writer, which removes its file).
    """

    def __init__(self, path: Path, *, start: int = 0, end: int | None = None, queue_size: int = DEFAULT_QUEUE,
                 info: VideoInfo | None = None, threads: int = 0, span: FrameSpan | None = None) -> None:
        """threads: the decoder's threads (0: FFmpeg's choice; each thread holds frames). span: decode only this
        keyframe segment, starting at its keyframe (start and end then count from the span's first frame)."""
        self.info = info or probe(Path(path))
        self.threads = threads
        self.span = span
        _check_trim(self.info, start, end)
        self.start, self.end = start, end
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, queue_size))
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._run, name="slimfuse-decode", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[VideoFrame]:
        while not self._done:
            item = self._queue.get()
            if item is END:
                self._done = True
                return
            if isinstance(item, BaseException):
                self._done = True
                raise item
            assert isinstance(item, VideoFrame)
            yield item

    def close(self) -> None:
        """Stop decoding and wait for the thread; safe to call twice and while frames are still queued."""
        self._stop.set()
        while self._thread.is_alive():
            drain(self._queue)
            self._thread.join(POLL_S)
        drain(self._queue)
        self._done = True

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _put(self, item: object) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=POLL_S)
                return
            except queue.Full:
                continue
        raise _Stopped

    def _run(self) -> None:
        try:
            with av.open(str(self.info.path)) as container:
                stream = container.streams.video[0]
                stream.thread_type = "AUTO"
                if self.threads and stream.codec_context is not None:
                    stream.codec_context.thread_count = self.threads
                if self.span is None:
                    self._decode(container, stream)
                else:
                    self._decode_span(container, stream, self.span)
            self._put(END)
        except _Stopped:
            return
        except SlimfuseError as exc:
            self._put_quietly(exc)
        except av.FFmpegError as exc:
            self._put_quietly(VideoDecodeStoppedError(self.info.path, 0, str(exc)))
        except BaseException as exc:  # noqa: BLE001 - the consumer re-raises it in its own thread
            self._put_quietly(exc)

    def _put_quietly(self, item: object) -> None:
        try:
            self._put(item)
        except _Stopped:
            pass

    def _decode(self, container: InputContainer, stream: VideoStream) -> None:
        index, last_pts, last_duration = 0, None, 0
        try:
            for packet in container.demux(stream):
                for frame in packet.decode():
                    if self.end is not None and index >= self.end:
                        return
                    pts = _frame_pts(frame, last_pts, self.info.frame_ticks)
                    duration = frame.duration or 0
                    if index >= self.start:
                        self._put(VideoFrame(index, pts, self.info.time_base, self._to_rgb(frame), duration))
                    index, last_pts, last_duration = index + 1, pts, duration
        except av.FFmpegError as exc:
            raise VideoDecodeStoppedError(self.info.path, index, _reason(exc)) from exc
        _check_complete(self.info, index, last_pts, last_duration)

    def _decode_span(self, container: InputContainer, stream: VideoStream, span: FrameSpan) -> None:
        """From the keyframe at or before the span's first pts (a seek), the frames whose pts lie in the span,
        numbered from its first index; frames before it (an open GOP's leading frames) are dropped."""
        container.seek(span.first_pts, stream=stream, backward=True, any_frame=False)
        index = span.start_index - span.warmup
        try:
            for packet in container.demux(stream):
                for frame in packet.decode():
                    if frame.pts is None or frame.pts < span.first_pts:
                        continue
                    if span.end_pts is not None and frame.pts >= span.end_pts:
                        return
                    self._put(VideoFrame(index, frame.pts, self.info.time_base, self._to_rgb(frame),
                                         frame.duration or 0))
                    index += 1
        except av.FFmpegError as exc:
            raise VideoDecodeStoppedError(self.info.path, index, _reason(exc)) from exc

    def _to_rgb(self, frame: av.VideoFrame) -> np.ndarray:
        if frame.format.name in UPSAMPLE_FIRST:
            # FFmpeg's direct 4:2:0 -> RGB path darkens every channel by about one level; upsampling the chroma
            # first costs about 1 ms per 720p frame and keeps the colours (mean error 0.2 levels instead of 1.1).
            frame = frame.reformat(format=UPSAMPLE_FIRST[frame.format.name])
        rgb: np.ndarray = frame.to_ndarray(format="rgb24")
        if self.info.rotation:
            rgb = np.ascontiguousarray(np.rot90(rgb, k=-(self.info.rotation // 90)))  # clockwise
        return rgb


def _check_trim(info: VideoInfo, start: int, end: int | None) -> None:
    if start < 0 or (end is not None and end <= start):
        raise UsageError(info.path, f"--trim-frame-start {start} and --trim-frame-end {end} select no frames")
    if info.frame_count is not None and start >= info.frame_count:
        raise UsageError(info.path, f"--trim-frame-start {start} is past the last frame ({info.frame_count} frames)")


def _frame_pts(frame: av.VideoFrame, last_pts: int | None, step: int) -> int:
    """The frame's pts; a frame without one (rare, some AVI files) follows the previous by one average frame."""
    if frame.pts is not None:
        return frame.pts
    return 0 if last_pts is None else last_pts + step


def _reason(exc: av.FFmpegError) -> str:
    return exc.strerror or str(exc)


def _check_complete(info: VideoInfo, count: int, last_pts: int | None, last_duration: int) -> None:
    """Raise if the stream ended before its header said it would: a truncated file decodes without an error."""
    if info.frame_count is not None:
        # AVI's header counts one frame more than it holds (FFmpeg's muxer adds an empty end packet).
        slack = 1 if info.container == "avi" else 0
        if count < info.frame_count - slack:
            raise VideoDecodeStoppedError(info.path, count, f"the file ends early: {count} of {info.frame_count} "
                                                            "frames")
        return
    if info.duration is None or last_pts is None:
        return
    end = float((last_pts - info.start_pts + (last_duration or info.frame_ticks)) * info.time_base)
    tolerance = 2 / float(info.fps) + 0.05
    if end < info.duration - tolerance:
        raise VideoDecodeStoppedError(info.path, count, f"the file ends early: {end:.2f} s of {info.duration:.2f} s")


def read_frame(path: Path, index: int) -> np.ndarray:
    """Frame `index` of a video, RGB (the last one when the video is shorter)."""
    last = None
    with VideoReader(path, start=0) as reader:
        for number, frame in enumerate(reader):
            last = frame.rgb
            if number >= index:
                break
    if last is None:
        raise SlimfuseError(path, "the video holds no frames")
    return last

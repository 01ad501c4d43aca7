"""Reading and writing videos as streams of frames, with PyAV (which bundles FFmpeg; no ffmpeg binary needed).

`VideoReader` decodes in its own thread into a bounded queue and `VideoWriter` encodes in its own thread from
one, so decoding, processing and encoding overlap and memory holds a few frames whatever the video's length.
Frames keep their timestamps end to end (variable frame rate included), come out upright (rotation metadata is
applied), and the output is written to a temporary name beside the destination and renamed only when complete.
"""
from __future__ import annotations

import errno
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import cast

import av
import numpy as np
from av.container import InputContainer, OutputContainer
from av.video.stream import VideoStream

from slimfuse.errors import (
    CodecUnavailableError,
    InputCorruptError,
    NoFramesError,
    NoSpaceError,
    NoVideoStreamError,
    OutputDirMissingError,
    OutputIsInputError,
    OutputUnwritableError,
    SlimfuseError,
    UsageError,
    VideoDecodeStoppedError,
)
from slimfuse.media.image_io import check_readable
from slimfuse.media.video_audio import REENCODE, AudioTrack, can_copy, open_source
from slimfuse.media.video_encoding import (
    CONTAINERS,
    EncodeSettings,
    check_encoder,
    choose_encoder,
    container_for,
    encoder_options,
    output_size,
)

__all__ = ["EncodeSettings", "VideoFrame", "VideoInfo", "VideoReader", "VideoWriter", "probe"]

VIDEO_SUFFIXES = tuple(CONTAINERS)
# A frame queue this long keeps decode and encode busy while the processors work; each slot is one RGB frame.
DEFAULT_QUEUE = 4
# mp4/mov: the index goes first, so players start before the download ends. Matroska: FFmpeg would otherwise
# shift every stream so the first packet (audio priming, or B-frame decode order) starts at zero, moving the video
# off its input timestamps; Matroska stores negative times itself.
CONTAINER_OPTIONS = {
    "mp4": {"movflags": "+faststart"}, "mov": {"movflags": "+faststart"},
    "matroska": {"avoid_negative_ts": "disabled"}, "webm": {"avoid_negative_ts": "disabled"},
}
UPSAMPLE_FIRST = {"yuv420p": "yuv444p", "yuv422p": "yuv444p", "nv12": "yuv444p", "yuvj420p": "yuvj444p",
                  "yuvj422p": "yuvj444p"}
_END = object()
_POLL_S = 0.1


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
                 info: VideoInfo | None = None, threads: int = 0) -> None:
        """threads: the decoder's threads (0: FFmpeg's choice; each thread holds frames)."""
        self.info = info or probe(Path(path))
        self.threads = threads
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
            if item is _END:
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
            self._drain()
            self._thread.join(_POLL_S)
        self._drain()
        self._done = True

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _drain(self) -> None:
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass

    def _put(self, item: object) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
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
                self._decode(container, stream)
            self._put(_END)
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


class _RateConverter:
    """Turns frames with their own timestamps into a constant rate: output slot k shows the input frame on screen
    at time origin + k/fps, so frames are repeated where the input is slower and dropped where it is faster."""

    def __init__(self, fps: Fraction) -> None:
        self.fps = fps
        self._origin: Fraction | None = None
        self._slot = 0
        self._pending: tuple[np.ndarray, Fraction] | None = None

    def push(self, rgb: np.ndarray, when: Fraction) -> Iterator[tuple[np.ndarray, int]]:
        """Feed a frame shown from `when` seconds; yields (pixels, slot) for the slots the previous frame covers."""
        if self._origin is None:
            self._origin = when
        if self._pending is not None:
            yield from self._emit_until(when)
        self._pending = (rgb, when)

    def finish(self, end: Fraction) -> Iterator[tuple[np.ndarray, int]]:
        if self._pending is not None:
            yield from self._emit_until(end)
            self._pending = None

    def _emit_until(self, until: Fraction) -> Iterator[tuple[np.ndarray, int]]:
        assert self._pending is not None and self._origin is not None
        while self._origin + self._slot / self.fps < until:
            yield self._pending[0], self._slot
            self._slot += 1

    @property
    def origin_pts(self) -> int:
        """The first slot's pts in 1/fps ticks, so a stream that starts late still does."""
        return 0 if self._origin is None else round(self._origin * self.fps)


class VideoWriter:
    """Encodes frames into `path` in a thread, with `info`'s audio, timestamps and (upright) geometry.

    write(frame) queues a frame (blocking while the queue is full); close() finishes the file and renames it into
    place; abort() (or leaving a `with` block by an exception, Ctrl-C included) removes everything it wrote.
    trim_start/trim_end: the frame range the reader was given, so the audio is cut to the same window (without
    them the whole audio track is kept). Timestamps are shifted so the first frame written lands where the input's
    first frame was. notify: receives one-line notices (audio re-encoded, audio cut short).
    """

    def __init__(self, path: Path, info: VideoInfo, settings: EncodeSettings = EncodeSettings(), *,
                 trim_start: int = 0, trim_end: int | None = None, queue_size: int = DEFAULT_QUEUE,
                 notify: Callable[[str], None] = lambda message: None) -> None:
        self.path = Path(path)
        self.info = info
        self.settings = settings
        self.frames_written = 0
        self._notify = notify
        self._trim = (trim_start, trim_end)
        self._fmt = container_for(self.path)
        self._check_output()
        self.encoder = choose_encoder(self.path, settings.encoder)
        check_encoder(self.encoder)
        self.size = output_size(info.width, info.height, settings.scale, self.encoder)
        self._rate = _RateConverter(settings.fps) if settings.fps is not None else None
        self._time_base = self._output_time_base()
        self._temp = self._make_temp()
        self._audio: AudioTrack | None = None
        self._source: InputContainer | None = None
        self._container: OutputContainer | None = None
        try:
            self._container, self._video = self._open_output()
        except BaseException:
            self._cleanup()
            raise
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, queue_size))
        self._error: BaseException | None = None
        self._abort = threading.Event()
        self._shift: int | None = None
        self._last_pts: int | None = None
        self._last: VideoFrame | None = None
        self._durations: dict[int, int] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="slimfuse-encode", daemon=True)
        self._thread.start()

    # --- the caller's side -------------------------------------------------------------------------------------

    def write(self, frame: VideoFrame) -> None:
        if frame.rgb.shape != (self.info.height, self.info.width, 3) or frame.rgb.dtype != np.uint8:
            raise ValueError(f"frame {frame.index} is {frame.rgb.shape} {frame.rgb.dtype}, expected "
                             f"({self.info.height}, {self.info.width}, 3) uint8")
        while True:
            self._raise_failure()
            try:
                self._queue.put(frame, timeout=_POLL_S)
                return
            except queue.Full:
                continue

    def close(self, path: Path | None = None) -> None:
        """Finish encoding, write the trailer, and move the file into place under its name, or under `path`
        (in the same directory, same container type: used to keep the frames before a decoding error apart)."""
        if self._closed:
            return
        try:
            while self._thread.is_alive():
                try:
                    self._queue.put(_END, timeout=_POLL_S)
                    break
                except queue.Full:
                    continue
            self._thread.join()
            self._raise_failure()
            if self.frames_written == 0:
                raise NoFramesError(self.path, "no frames were written; the output is not created")
            _fsync(self._temp)
            os.replace(self._temp, path or self.path)
            self._closed = True
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Stop, and remove the temporary file: nothing is left under the output name or beside it."""
        if self._closed:
            return
        self._closed = True
        self._abort.set()
        while self._thread.is_alive():
            _drain(self._queue)
            self._thread.join(_POLL_S)
        self._cleanup()

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise self._error

    # --- setting up ----------------------------------------------------------------------------------------------

    def _check_output(self) -> None:
        parent = self.path.parent if str(self.path.parent) else Path(".")
        if not parent.is_dir():
            raise OutputDirMissingError(self.path, f"output directory {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise OutputUnwritableError(self.path, f"output directory {parent} is not writable")
        if self.path.exists() and self.path.resolve() == Path(self.info.path).resolve():
            raise OutputIsInputError(self.path)

    def _output_time_base(self) -> Fraction:
        if self._rate is not None:
            return 1 / self._rate.fps
        if self._fmt == "avi":
            # AVI counts frames, not time: a fine time base would write thousands of empty frames per frame.
            return 1 / self.info.fps.limit_denominator(1001)
        return self.info.time_base

    def _make_temp(self) -> str:
        parent = self.path.parent if str(self.path.parent) else Path(".")
        try:
            fd, name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".part", dir=parent)
        except OSError as exc:
            raise _write_error(self.path, exc) from exc
        os.close(fd)
        return name

    def _open_output(self) -> tuple[OutputContainer, VideoStream]:
        """Open the temporary file with the video stream and the audio (copied when the container takes its codec;
        if the muxer still refuses it, the file is started again with the audio re-encoded)."""
        copy_first = True
        while True:
            container = self._new_container()
            try:
                video = self._add_video(container)
                self._add_audio(container, allow_copy=copy_first)
                container.start_encoding()
                return container, video
            except av.FFmpegError as exc:
                copied = self._audio is not None and self._audio.copied
                _close_quietly(container)
                self._close_source()
                if copied and copy_first:
                    copy_first = False
                    continue
                raise _write_error(self.path, exc) from exc
            except BaseException:
                _close_quietly(container)
                self._close_source()
                raise

    def _new_container(self) -> OutputContainer:
        options = CONTAINER_OPTIONS.get(self._fmt, {})
        try:
            return av.open(self._temp, "w", format=self._fmt, container_options=options)
        except (av.FFmpegError, OSError) as exc:
            raise _write_error(self.path, exc) from exc

    def _add_video(self, container: OutputContainer) -> VideoStream:
        rate = self._rate.fps if self._rate is not None else self.info.fps.limit_denominator(1001 * 1000)
        options = encoder_options(self.encoder, self.settings.quality, self.settings.preset)
        video = cast(VideoStream, container.add_stream(self.encoder, rate=rate, options=options))
        video.width, video.height = self.size
        video.pix_fmt = "yuv420p"
        video.time_base = self._time_base
        context = video.codec_context
        context.time_base = self._time_base
        context.bit_rate = 0
        # BT.709, limited range: what the RGB -> YUV conversion below uses, tagged so players decode it the same way.
        context.colorspace, context.color_primaries, context.color_trc, context.color_range = 1, 1, 1, 1
        context.thread_type = "AUTO"
        if self.settings.threads:
            context.thread_count = self.settings.threads
        if self._fmt == "avi":
            context.max_b_frames = 0  # AVI stores no presentation times: with B-frames they would be guessed
        return video

    def _add_audio(self, container: OutputContainer, allow_copy: bool) -> None:
        self._audio = None
        if self.settings.skip_audio or not self.info.has_audio:
            return
        self._source = open_source(self.info.path)
        if self._source is None:
            return
        stream = self._source.streams.audio[0]
        name = stream.codec_context.name if stream.codec_context is not None else None
        if name is None:
            self._notify(f"{self.info.path}: its audio codec has no decoder here; the output has no audio")
            self._close_source()
            return
        copy = allow_copy and can_copy(self._fmt, name, container)
        self._audio = AudioTrack(self._source, container, self._fmt, copy)
        if not copy:
            self._notify(f"{self.info.path}: {name} audio cannot go into a {self.path.suffix} file as it is; "
                         f"re-encoding it to {REENCODE[self._fmt]}")

    # --- the encoding thread -------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._abort.is_set():
                try:
                    item = self._queue.get(timeout=_POLL_S)
                except queue.Empty:
                    continue
                if item is _END:
                    self._finish()
                    return
                assert isinstance(item, VideoFrame)
                self._encode(item)
        except (av.FFmpegError, OSError) as exc:
            self._error = _write_error(self.path, exc)
            self._error.__cause__ = exc
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self._error = exc

    def _encode(self, frame: VideoFrame) -> None:
        if self._shift is None:
            self._begin(frame)
        assert self._shift is not None
        when = Fraction(frame.pts - self._shift) * frame.time_base
        if self._rate is not None:
            for rgb, slot in self._rate.push(frame.rgb, when):
                self._encode_rgb(rgb, self._rate.origin_pts + slot, 1)
        else:
            pts = round(when / self._time_base)
            if self._last_pts is not None and pts <= self._last_pts:
                pts = self._last_pts + 1  # a repeated or backward timestamp would stop the muxer
            self._encode_rgb(frame.rgb, pts, round(Fraction(frame.duration) * frame.time_base / self._time_base))
            self._last_pts = pts
        self._last = frame
        self.frames_written += 1
        if self._audio is not None:
            self._audio.feed_until(float(when), self._mux)

    def _begin(self, frame: VideoFrame) -> None:
        """The first frame fixes the shift: it lands where the input's first frame was."""
        self._shift = frame.pts - self.info.start_pts
        if self._audio is not None:
            start = frame.time if self._trim[0] > 0 else None
            self._audio.begin(start, Fraction(self._shift) * frame.time_base)

    def _encode_rgb(self, rgb: np.ndarray, pts: int, duration: int) -> None:
        out = self._to_yuv(rgb)
        out.pts = pts
        out.time_base = self._time_base
        if duration > 0:
            self._durations[pts] = duration
        self._mux_video(self._video.encode(out))

    def _mux_video(self, packets: list[av.Packet]) -> None:
        # Encoders drop the frame's duration; without it the muxer guesses the last frame's, and a variable-rate
        # video would come out longer or shorter than it went in. The dict holds only frames still in the encoder.
        for packet in packets:
            duration = self._durations.pop(packet.pts, 0) if packet.pts is not None else 0
            if duration:
                packet.duration = duration
        self._mux(packets)

    def _mux(self, packets: list[av.Packet]) -> None:
        assert self._container is not None
        self._container.mux(packets)

    def _to_yuv(self, rgb: np.ndarray) -> av.VideoFrame:
        width, height = self.size
        if self.settings.scale == 1.0 and (width, height) != (rgb.shape[1], rgb.shape[0]):
            # Odd sizes for 4:2:0 encoders: repeat the last row/column rather than resample every pixel.
            rgb = np.pad(rgb, ((0, height - rgb.shape[0]), (0, width - rgb.shape[1]), (0, 0)), mode="edge")
        interpolation = "AREA" if width < rgb.shape[1] else "BICUBIC"
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        return frame.reformat(width=width, height=height, format="yuv420p", dst_colorspace="ITU709",
                              dst_color_range="MPEG", interpolation=interpolation)

    def _finish(self) -> None:
        end = self._end_time()
        if self._rate is not None and end is not None:
            for rgb, slot in self._rate.finish(end):
                self._encode_rgb(rgb, self._rate.origin_pts + slot, 1)
        self._mux_video(self._video.encode(None))
        self._durations.clear()
        if self._audio is not None:
            cut = float(end) if end is not None and self._trim[1] is not None else None
            self._audio.finish(cut, self._mux)
            if self._audio.stopped_reason:
                self._notify(f"{self.info.path}: the audio stopped early ({self._audio.stopped_reason})")
        assert self._container is not None
        self._container.close()
        self._close_source()

    def _end_time(self) -> Fraction | None:
        """Output time where the last frame written stops being shown."""
        if self._last is None or self._shift is None:
            return None
        ticks = self._last.duration or self.info.frame_ticks
        return Fraction(self._last.pts - self._shift + ticks) * self._last.time_base

    # --- cleaning up ---------------------------------------------------------------------------------------------

    def _cleanup(self) -> None:
        if self._container is not None:
            _close_quietly(self._container)
        self._close_source()
        try:
            os.unlink(self._temp)
        except FileNotFoundError:
            pass

    def _close_source(self) -> None:
        if self._source is not None:
            _close_quietly(self._source)
            self._source = None


def _drain(items: queue.Queue[object]) -> None:
    try:
        while True:
            items.get_nowait()
    except queue.Empty:
        pass


def _close_quietly(container: InputContainer | OutputContainer) -> None:
    try:
        container.close()
    except (av.FFmpegError, OSError, ValueError):
        pass


def _fsync(name: str) -> None:
    fd = os.open(name, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_error(path: Path, exc: BaseException) -> SlimfuseError:
    if getattr(exc, "errno", None) == errno.ENOSPC:
        return NoSpaceError(path)
    return OutputUnwritableError(path, f"cannot write the video ({exc})")

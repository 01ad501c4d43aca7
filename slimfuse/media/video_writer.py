"""Encoding frames into a video in its own thread, with the input's audio, timestamps and geometry, written
through slimfuse.atomic: a temporary name beside the destination, renamed only when complete."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import cast

import av
import numpy as np
from av.container import InputContainer, OutputContainer
from av.video.stream import VideoStream

from slimfuse.atomic import AtomicFile, check_destination, remove_stale, write_error
from slimfuse.errors import NoFramesError, OutputIsInputError, UnsupportedTypeError
from slimfuse.media.c2pa_sign import signing_step
from slimfuse.media.frame_queue import DEFAULT_QUEUE, END, POLL_S, drain
from slimfuse.media.provenance import ProvenanceLabel
from slimfuse.media.video_audio import AudioTrack, audio_source, check_audio_encoder
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.video_encoding import check_encoder, choose_encoder, container_for, encoder_options, output_size
from slimfuse.media.video_probe import VideoInfo
from slimfuse.media.video_rate import RateConverter
from slimfuse.media.video_reader import VideoFrame

# mp4/mov: the index goes first, so players start before the download ends. Matroska: FFmpeg would otherwise
# shift every stream so the first packet (audio priming, or B-frame decode order) starts at zero, moving the video
# off its input timestamps; Matroska stores negative times itself.
CONTAINER_OPTIONS = {
    "mp4": {"movflags": "+faststart"}, "mov": {"movflags": "+faststart"},
    "matroska": {"avoid_negative_ts": "disabled"}, "webm": {"avoid_negative_ts": "disabled"},
}
# mp4/mov keep only the standard tags unless told to write custom keys (the provenance's digital_source_type).
LABEL_OPTIONS = {"mp4": {"movflags": "+faststart+use_metadata_tags"}, "mov": {"movflags": "+faststart+use_metadata_tags"}}


class VideoWriter:
    """Encodes frames into `path` in a thread, with `info`'s audio, timestamps and (upright) geometry.

    write(frame) queues a frame (blocking while the queue is full); close() finishes the file and renames it into
    place; abort() (or leaving a `with` block by an exception, Ctrl-C included) removes everything it wrote.
    trim_start/trim_end: the frame range the reader was given, so the audio is cut to the same window (without
    them the whole audio track is kept). Timestamps are shifted so the first frame written lands where the input's
    first frame was. notify: receives one-line notices (audio re-encoded, audio cut short, stale temporary files
    of dead runs removed from the output folder). provenance: the label that says the video is synthetic
    (container tags; a signed C2PA manifest too when the label has a signer); None writes no label.
    """

    def __init__(self, path: Path, info: VideoInfo, settings: EncodeSettings = EncodeSettings(), *,
                 trim_start: int = 0, trim_end: int | None = None, queue_size: int = DEFAULT_QUEUE,
                 notify: Callable[[str], None] = lambda message: None,
                 provenance: ProvenanceLabel | None = None) -> None:
        self.path = Path(path)
        self.provenance = provenance
        self.info = info
        self.settings = settings
        self.frames_written = 0
        self._notify = notify
        self._trim = (trim_start, trim_end)
        self._fmt = container_for(self.path)
        self._check_output()
        self.encoder = choose_encoder(self.path, settings.encoder)
        if settings.alpha and self._fmt != "webm":
            raise UnsupportedTypeError(self.path, "only a .webm video keeps an alpha channel here")
        check_encoder(self.encoder)
        check_audio_encoder(self.path, self._fmt, settings)
        self.size = output_size(info.width, info.height, settings.scale, self.encoder)
        self._rate = RateConverter(settings.fps) if settings.fps is not None else None
        self._time_base = self._output_time_base()
        self._file = self._make_temp()
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
        """Queue a frame: RGB, or RGBA when the settings keep an alpha channel."""
        channels = 4 if self.settings.alpha else 3
        if frame.rgb.shape != (self.info.height, self.info.width, channels) or frame.rgb.dtype != np.uint8:
            raise ValueError(f"frame {frame.index} is {frame.rgb.shape} {frame.rgb.dtype}, expected "
                             f"({self.info.height}, {self.info.width}, {channels}) uint8")
        while True:
            self._raise_failure()
            try:
                self._queue.put(frame, timeout=POLL_S)
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
                    self._queue.put(END, timeout=POLL_S)
                    break
                except queue.Full:
                    continue
            self._thread.join()
            self._raise_failure()
            if self.frames_written == 0:
                raise NoFramesError(self.path, "no frames were written; the output is not created")
            self._file.commit(path)
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
            drain(self._queue)
            self._thread.join(POLL_S)
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
        check_destination(self.path)
        if self.path.exists() and self.path.resolve() == Path(self.info.path).resolve():
            raise OutputIsInputError(self.path)

    def _output_time_base(self) -> Fraction:
        if self._rate is not None:
            return 1 / self._rate.fps
        if self._fmt == "avi":
            # AVI counts frames, not time: a fine time base would write thousands of empty frames per frame.
            return 1 / self.info.fps.limit_denominator(1001)
        return self.info.time_base

    def _make_temp(self) -> AtomicFile:
        remove_stale(self.path.parent if str(self.path.parent) else Path("."), self._notify)
        try:
            return AtomicFile(self.path, signing_step(self.path, self.provenance, self._notify))
        except OSError as exc:
            raise write_error(self.path, exc, "the video") from exc

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
                raise write_error(self.path, exc, "the video") from exc
            except BaseException:
                _close_quietly(container)
                self._close_source()
                raise

    def _new_container(self) -> OutputContainer:
        labelled = LABEL_OPTIONS.get(self._fmt) if self.provenance is not None else None
        options = labelled or CONTAINER_OPTIONS.get(self._fmt, {})
        try:
            container = av.open(str(self._file.temp), "w", format=self._fmt, container_options=options)
        except (av.FFmpegError, OSError) as exc:
            raise write_error(self.path, exc, "the video") from exc
        if self.provenance is not None:
            container.metadata.update(self.provenance.container_tags())
        return container

    def _add_video(self, container: OutputContainer) -> VideoStream:
        rate = self._rate.fps if self._rate is not None else self.info.fps.limit_denominator(1001 * 1000)
        options = encoder_options(self.encoder, self.settings.quality, self.settings.preset)
        video = cast(VideoStream, container.add_stream(self.encoder, rate=rate, options=options))
        video.width, video.height = self.size
        video.pix_fmt = self._pixel_format
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
        path, self._source = audio_source(self.info.path, self.info.has_audio, self.settings)
        if self._source is None:
            return
        stream = self._source.streams.audio[0]
        name = stream.codec_context.name if stream.codec_context is not None else None
        if name is None:
            self._notify(f"{path}: its audio codec has no decoder here; the output has no audio")
            self._close_source()
            return
        self._audio = AudioTrack(self._source, container, self._fmt, self.settings, allow_copy)
        if not self._audio.copied and not self.settings.audio_reencoded:
            self._notify(f"{path}: {name} audio cannot go into a {self.path.suffix} file as it is; "
                         f"re-encoding it to {self._audio.encoder}")

    # --- the encoding thread -------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._abort.is_set():
                try:
                    item = self._queue.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                if item is END:
                    self._finish()
                    return
                assert isinstance(item, VideoFrame)
                self._encode(item)
        except (av.FFmpegError, OSError) as exc:
            self._error = write_error(self.path, exc, "the video")
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
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgba" if self.settings.alpha else "rgb24")
        return frame.reformat(width=width, height=height, format=self._pixel_format, dst_colorspace="ITU709",
                              dst_color_range="MPEG", interpolation=interpolation)

    @property
    def _pixel_format(self) -> str:
        """4:2:0, with a full-size alpha plane when the frames keep theirs (VP9 in WebM stores it beside)."""
        return "yuva420p" if self.settings.alpha else "yuv420p"

    def _finish(self) -> None:
        end = self._end_time()
        if self._rate is not None and end is not None:
            for rgb, slot in self._rate.finish(end):
                self._encode_rgb(rgb, self._rate.origin_pts + slot, 1)
        self._mux_video(self._video.encode(None))
        self._durations.clear()
        if self._audio is not None:
            cut_here = self._trim[1] is not None or self.settings.audio_path is not None
            cut = float(end) if end is not None and cut_here else None
            self._audio.finish(cut, self._mux)
            if self._audio.stopped_reason:
                audio_path = self.settings.audio_path or self.info.path
                self._notify(f"{audio_path}: the audio stopped early ({self._audio.stopped_reason})")
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
        self._file.discard()

    def _close_source(self) -> None:
        if self._source is not None:
            _close_quietly(self._source)
            self._source = None


def _close_quietly(container: InputContainer | OutputContainer) -> None:
    try:
        container.close()
    except (av.FFmpegError, OSError, ValueError):
        pass

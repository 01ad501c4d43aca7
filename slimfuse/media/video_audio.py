"""The output video's audio: the input's audio stream, copied packet by packet when the output container can hold
its codec and re-encoded otherwise, cut to the trimmed video's time window and shifted with it.

The writer thread feeds audio up to the time of the video it has just written, so the two streams interleave in
the file and neither is buffered whole.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import av
import numpy as np
from av.audio.stream import AudioStream
from av.container import InputContainer, OutputContainer

# What a container's audio is re-encoded to when the input's codec cannot go in, and at what bit rate.
REENCODE = {"mp4": "aac", "mov": "aac", "matroska": "aac", "webm": "libopus", "avi": "libmp3lame"}
BIT_RATES = {"aac": 192_000, "libopus": 128_000, "libmp3lame": 192_000}
# Pairs FFmpeg lists but cannot finish (PCM in mp4 fails at the trailer) or writes only as "experimental" (vorbis
# in mp4/mov, which players reject): re-encode instead. Other refusals are caught when the header is written.
COPY_REFUSED = {("mp4", "vorbis"), ("mov", "vorbis"), ("mp4", "pcm_")}
# AVI cannot store negative timestamps; FFmpeg would shift every stream to fit, which moves the video off its
# timestamps, so audio that would land before zero (encoder priming) is dropped there instead.
NEGATIVE_TS_OK = {"mp4", "mov", "matroska", "webm"}


def can_copy(fmt: str, codec_name: str, output: OutputContainer) -> bool:
    refused = any(fmt == container and codec_name.startswith(prefix) for container, prefix in COPY_REFUSED)
    return codec_name in output.supported_codecs and not refused


class AudioTrack:
    """The input's first audio stream, on its way into `output`.

    Build it (it adds the output stream) before the output's header is written. When the first video frame is known,
    `begin(start, shift)`: audio from `start` seconds of input time (None: all of it), every timestamp moved back by
    `shift` seconds, as the video's are. Then `feed_until(t)` with the output time of the video written so far, and
    `finish(end)` once the video is done (`end`: output time where the audio stops, None: the input's end).

    Copied audio is cut at packet boundaries (within one audio frame); re-encoded audio is cut to the sample.
    """

    def __init__(self, source: InputContainer, output: OutputContainer, fmt: str, copy: bool) -> None:
        self._source = source
        self._input: AudioStream = source.streams.audio[0]
        self.copied = copy
        self._negative_ok = fmt in NEGATIVE_TS_OK
        self._start: float | None = None
        self._end = float("inf")
        self._time_base = self._input.time_base or Fraction(1, self._input.sample_rate)
        self._shift_ticks = 0
        self._output = (output.add_stream_from_template(self._input) if copy
                        else _add_encoder(output, REENCODE[fmt], self._input))
        self._items: Iterator[av.Packet | av.AudioFrame] = self._packets() if copy else self._frames()
        self._pending: av.Packet | av.AudioFrame | None = None
        self.stopped_reason: str | None = None

    def begin(self, start: float | None, shift: Fraction) -> None:
        self._start = start
        self._shift_ticks = round(shift / self._time_base)

    def feed_until(self, seconds: float, mux: Callable[[list[av.Packet]], None]) -> None:
        """Mux the audio that starts before output time `seconds`."""
        while True:
            if self._pending is None:
                self._pending = self._next()
                if self._pending is None:
                    return
            item = self._pending
            if item.pts is not None and float(item.pts * (item.time_base or self._time_base)) >= seconds:
                return
            self._pending = None
            packets = [item] if isinstance(item, av.Packet) else self._output.encode(self._cut_tail(item))
            mux([packet for packet in packets if self._keeps(packet)])

    def finish(self, end: float | None, mux: Callable[[list[av.Packet]], None]) -> None:
        self._end = float("inf") if end is None else end
        self.feed_until(self._end, mux)
        if not self.copied:
            mux([packet for packet in self._output.encode(None) if self._keeps(packet)])

    def _next(self) -> av.Packet | av.AudioFrame | None:
        try:
            return next(self._items)
        except StopIteration:
            return None
        except av.FFmpegError as exc:
            # Audio that stops decoding ends the audio, not the video.
            self.stopped_reason = str(exc)
            return None

    def _keeps(self, packet: av.Packet) -> bool:
        return self._negative_ok or packet.pts is None or packet.pts >= 0

    def _packets(self) -> Iterator[av.Packet]:
        for packet in self._source.demux(self._input):
            if packet.size == 0 or packet.pts is None:
                continue
            if self._start is not None and float(packet.pts * packet.time_base) < self._start - 1e-6:
                continue
            packet.pts -= self._shift_ticks
            if packet.dts is not None:
                packet.dts -= self._shift_ticks
            packet.stream = self._output
            yield packet

    def _frames(self) -> Iterator[av.AudioFrame]:
        for frame in self._source.decode(self._input):
            if frame.pts is None:
                continue
            if self._start is not None:
                skip = round((self._start - float(frame.pts * self._time_base)) * frame.sample_rate)
                if skip >= frame.samples:
                    continue
                if skip > 0:
                    frame = _samples(frame, skip, frame.samples, self._time_base)
            frame.pts = (frame.pts or 0) - self._shift_ticks
            yield frame

    def _cut_tail(self, frame: av.AudioFrame) -> av.AudioFrame:
        if self._end == float("inf") or frame.pts is None:
            return frame
        keep = round((self._end - float(frame.pts * self._time_base)) * frame.sample_rate)
        return frame if keep >= frame.samples else _samples(frame, 0, max(keep, 1), self._time_base)


def _samples(frame: av.AudioFrame, first: int, stop: int, time_base: Fraction) -> av.AudioFrame:
    """Samples [first, stop) of `frame` as a frame of their own, with its pts moved to match."""
    data: Any = frame.to_ndarray()
    part = data[:, first:stop] if frame.format.is_planar else data[:, first * frame.layout.nb_channels:
                                                                       stop * frame.layout.nb_channels]
    out = av.AudioFrame.from_ndarray(np.ascontiguousarray(part), format=frame.format.name, layout=frame.layout.name)
    out.sample_rate = frame.sample_rate
    out.time_base = time_base
    out.pts = (frame.pts or 0) + round(Fraction(first, frame.sample_rate) / time_base)
    return out


def _add_encoder(output: OutputContainer, codec: str, source: AudioStream) -> AudioStream:
    rates = av.Codec(codec, "w").audio_rates
    rate = source.sample_rate
    if rates and rate not in rates:
        rate = min(rates, key=lambda candidate: (abs(candidate - rate), -candidate))
    # By channel count: PCM and FLAC often carry an unordered "2 channels" layout that AAC refuses; mp3 has two.
    layout = {1: "mono", 2: "stereo"}.get(source.channels, source.layout.name)
    if codec == "libmp3lame" and source.channels > 2:
        layout = "stereo"
    stream = cast(AudioStream, output.add_stream(codec, rate=rate, layout=layout))
    stream.codec_context.bit_rate = BIT_RATES[codec]
    return stream


def open_source(path: Path) -> InputContainer | None:
    """The input opened again for its audio (the reader has its own handle), or None when it has no audio."""
    source = av.open(str(path))
    if not source.streams.audio:
        source.close()
        return None
    return source

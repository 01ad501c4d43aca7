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

from slimfuse.errors import CodecUnavailableError, UnsupportedTypeError
from slimfuse.media.formats import AUDIO_ENCODERS, EncodeSettings

# What a container's audio is re-encoded to when the input's codec cannot go in, and at what bit rate.
REENCODE = {"mp4": "aac", "mov": "aac", "matroska": "aac", "webm": "libopus", "avi": "libmp3lame"}
BIT_RATES = {"aac": 192_000, "libopus": 128_000, "libmp3lame": 192_000, "libvorbis": 192_000}
# --output-audio-quality 0-100 maps linearly onto these bit rates (bit/s), from the lowest to the highest quality
# (libopus's are FaceFusion's; FaceFusion gives the others a VBR scale, which has no common unit). FLAC and PCM are
# lossless: quality does not apply.
QUALITY_BIT_RATES = {"aac": (64_000, 320_000), "libmp3lame": (64_000, 320_000), "libvorbis": (64_000, 320_000),
                     "libopus": (64_000, 256_000)}
# The audio encoders each container holds here (tried with FFmpeg: FLAC and Opus do not go into .mov or .avi, .webm
# takes only Opus and Vorbis; PCM and Vorbis in .mp4 are refused as for copying, below).
HOLDS = {"mp4": ("flac", "aac", "libmp3lame", "libopus"), "mov": ("aac", "libmp3lame", "pcm_s16le", "pcm_s32le"),
         "matroska": ("flac", "aac", "libmp3lame", "libopus", "libvorbis", "pcm_s16le", "pcm_s32le"),
         "webm": ("libopus", "libvorbis"), "avi": ("aac", "libmp3lame", "pcm_s16le", "pcm_s32le")}
# Pairs FFmpeg lists but cannot finish (PCM in mp4 fails at the trailer) or writes only as "experimental" (vorbis
# in mp4/mov, which players reject): re-encode instead. Other refusals are caught when the header is written.
COPY_REFUSED = {("mp4", "vorbis"), ("mov", "vorbis"), ("mp4", "pcm_")}
# AVI cannot store negative timestamps; FFmpeg would shift every stream to fit, which moves the video off its
# timestamps, so audio that would land before zero (encoder priming) is dropped there instead.
NEGATIVE_TS_OK = {"mp4", "mov", "matroska", "webm"}


def can_copy(fmt: str, codec_name: str, output: OutputContainer) -> bool:
    refused = any(fmt == container and codec_name.startswith(prefix) for container, prefix in COPY_REFUSED)
    return codec_name in output.supported_codecs and not refused


def check_audio_encoder(path: Path, fmt: str, settings: EncodeSettings) -> None:
    """Refuse, before any frame is encoded, an --output-audio-encoder this FFmpeg lacks (CodecUnavailableError) or
    the output's container cannot hold (UnsupportedTypeError)."""
    encoder = settings.audio_encoder
    if encoder is None or settings.skip_audio:
        return
    if encoder not in av.codecs_available:
        raise CodecUnavailableError(None, f"audio encoder {encoder} is not in this FFmpeg build (available: "
                                          f"{', '.join(name for name in AUDIO_ENCODERS if name in av.codecs_available)})")
    if encoder not in HOLDS[fmt]:
        held = [name for name in HOLDS[fmt] if name in av.codecs_available]
        raise UnsupportedTypeError(path, f"a '{path.suffix}' file cannot hold {encoder} audio (use "
                                         f"--output-audio-encoder {' or '.join(held)})")


def audio_bit_rate(encoder: str, quality: int | None) -> int | None:
    """The bit rate `encoder` runs at: --output-audio-quality mapped onto its range, else its usual one; None for
    the lossless encoders."""
    if encoder not in BIT_RATES:
        return None
    if quality is None:
        return BIT_RATES[encoder]
    low, high = QUALITY_BIT_RATES[encoder]
    return round(low + (high - low) * quality / 100)


class AudioTrack:
    """The input's first audio stream, on its way into `output`.

    Build it (it adds the output stream) before the output's header is written. When the first video frame is known,
    `begin(start, shift)`: audio from `start` seconds of input time (None: all of it), every timestamp moved back by
    `shift` seconds, as the video's are. Then `feed_until(t)` with the output time of the video written so far, and
    `finish(end)` once the video is done (`end`: output time where the audio stops, None: the input's end).

    Copied audio is cut at packet boundaries (within one audio frame); re-encoded audio is cut to the sample.
    """

    def __init__(self, source: InputContainer, output: OutputContainer, fmt: str, settings: EncodeSettings,
                 allow_copy: bool = True) -> None:
        """The audio is copied when `allow_copy`, the container takes its codec and the settings ask for no encoder,
        quality or volume of their own; else re-encoded (`settings.audio_encoder`, or the container's usual one)."""
        self._source = source
        self._input: AudioStream = source.streams.audio[0]
        name = self._input.codec_context.name
        copy = allow_copy and not settings.audio_reencoded and can_copy(fmt, name, output)
        self.copied = copy
        self.encoder = None if copy else settings.audio_encoder or REENCODE[fmt]
        self._gain = settings.audio_volume / 100
        self._negative_ok = fmt in NEGATIVE_TS_OK
        self._start: float | None = None
        self._end = float("inf")
        self._time_base = self._input.time_base or Fraction(1, self._input.sample_rate)
        self._shift_ticks = 0
        self._output = (output.add_stream_from_template(self._input) if self.encoder is None
                        else _add_encoder(output, self.encoder, self._input, settings.audio_quality))
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
            yield frame if self._gain == 1 else _louder(frame, self._gain, self._time_base)

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


def _louder(frame: av.AudioFrame, gain: float, time_base: Fraction) -> av.AudioFrame:
    """`frame` with every sample times `gain` (--output-audio-volume); whole-number samples are rounded and kept in
    their range."""
    data: Any = frame.to_ndarray()
    if np.issubdtype(data.dtype, np.integer):
        limits = np.iinfo(data.dtype)
        scaled = np.clip(np.rint(data.astype(np.float64) * gain), limits.min, limits.max).astype(data.dtype)
    else:
        scaled = (data * gain).astype(data.dtype)
    out = av.AudioFrame.from_ndarray(np.ascontiguousarray(scaled), format=frame.format.name, layout=frame.layout.name)
    out.sample_rate = frame.sample_rate
    out.time_base = time_base
    out.pts = frame.pts
    return out


def _add_encoder(output: OutputContainer, codec: str, source: AudioStream, quality: int | None) -> AudioStream:
    rates = av.Codec(codec, "w").audio_rates
    rate = source.sample_rate
    if rates and rate not in rates:
        rate = min(rates, key=lambda candidate: (abs(candidate - rate), -candidate))
    # By channel count: PCM and FLAC often carry an unordered "2 channels" layout that AAC refuses; mp3 has two.
    layout = {1: "mono", 2: "stereo"}.get(source.channels, source.layout.name)
    if codec == "libmp3lame" and source.channels > 2:
        layout = "stereo"
    stream = cast(AudioStream, output.add_stream(codec, rate=rate, layout=layout))
    bit_rate = audio_bit_rate(codec, quality)
    if bit_rate is not None:
        stream.codec_context.bit_rate = bit_rate
    return stream


def audio_source(video: Path, has_audio: bool, settings: EncodeSettings) -> tuple[Path, InputContainer | None]:
    """Where the output's audio comes from (settings.audio_path, else the input video) and that file opened for
    it; None when the output has no audio (--skip-audio, or no audio stream there)."""
    path = settings.audio_path or video
    if settings.skip_audio or (settings.audio_path is None and not has_audio):
        return path, None
    return path, open_source(path)


def open_source(path: Path) -> InputContainer | None:
    """The input opened again for its audio (the reader has its own handle), or None when it has no audio."""
    source = av.open(str(path))
    if not source.streams.audio:
        source.close()
        return None
    return source

"""Long videos in keyframe segments: where to cut (at keyframes, into about equal runs of frames), and the join.

Each segment is decoded from its keyframe, swapped and encoded with the same encoder settings into a file of its
own (video only, unlabelled). The join copies the segments' packets into the output with each segment's time
offset (no re-encode) and the input's audio once, so the output has the input's frame count, timestamps and
duration. A join needs the same stream parameters in every segment (the codec's extradata: SPS/PPS); where they
differ, the frames are decoded and encoded again into the output instead, with a notice.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

import av
from av.container import OutputContainer

from slimfuse.atomic import AtomicFile, write_error
from slimfuse.errors import NoFramesError
from slimfuse.media.c2pa_sign import signing_step
from slimfuse.media.provenance import ProvenanceLabel
from slimfuse.media.video_audio import AudioTrack, audio_source
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.video_encoding import container_for
from slimfuse.media.video_probe import VideoInfo, probe
from slimfuse.media.video_reader import FrameSpan, VideoFrame, VideoReader
from slimfuse.media.video_writer import CONTAINER_OPTIONS, LABEL_OPTIONS, VideoWriter

Notify = Callable[[str], None]


@dataclass(frozen=True)
class Keyframes:
    """A video's frames by presentation order: each keyframe's (index, pts), and every frame's pts."""

    keyframes: tuple[tuple[int, int], ...]
    stamps: tuple[int, ...]

    @property
    def frames(self) -> int:
        return len(self.stamps)


def scan_keyframes(path: Path) -> Keyframes:
    """Read the video's packets (no decoding): every frame's pts, and which ones are keyframes."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stamps: list[int] = []
        keys: set[int] = set()
        for packet in container.demux(stream):
            if packet.pts is None or packet.size == 0:
                continue
            stamps.append(packet.pts)
            if packet.is_keyframe:
                keys.add(packet.pts)
    stamps.sort()
    return Keyframes(tuple((index, pts) for index, pts in enumerate(stamps) if pts in keys), tuple(stamps))


def plan_segments(keyframes: Keyframes, pieces: int, min_frames: int = 1) -> list[FrameSpan]:
    """At most `pieces` segments, cut at keyframes, each about frames / pieces long and at least `min_frames`
    (the last may be shorter)."""
    marks = keyframes.keyframes
    if not marks:
        return [FrameSpan(0, 0, None)]
    step = max(min_frames, -(-keyframes.frames // max(1, pieces)))
    chosen = [marks[0]]
    for index, pts in marks[1:]:
        if index - chosen[-1][0] >= step and keyframes.frames - index >= min(min_frames, step):
            chosen.append((index, pts))
    ends: list[int | None] = [pts for _, pts in chosen[1:]]
    return [FrameSpan(index, pts, end) for (index, pts), end in zip(chosen, [*ends, None], strict=True)]


def with_warmup(spans: Sequence[FrameSpan], keyframes: Keyframes, frames: int, interval: int) -> list[FrameSpan]:
    """Each segment after the first also decodes about `frames` frames before it, starting on a multiple of the
    detector's interval, so the detector runs on the frames a run through the whole video runs it on."""
    warmed = []
    for span in spans:
        first = span.start_index - frames - span.start_index % interval if span.start_index else 0
        first = max(0, first)
        count = span.start_index - first
        warmed.append(replace(span, warmup=count, warmup_pts=keyframes.stamps[first] if count else None))
    return warmed


@dataclass(frozen=True)
class JoinResult:
    frames: int
    copied: bool
    """True: the segments' packets were copied (no re-encode); False: re-encoded (parameters differed)."""


def join_segments(info: VideoInfo, spans: Sequence[FrameSpan], parts: Sequence[Path], output: Path,
                  settings: EncodeSettings, provenance: ProvenanceLabel | None, notify: Notify) -> JoinResult:
    """Join the segment files `parts` (one per span, in order) into `output`, atomically, with the input's audio
    (unless settings.skip_audio) and the run's label."""
    if not _same_parameters(parts):
        notify(f"{output}: the segments were encoded with different stream parameters; re-encoding them into one "
               "video instead of copying")
        return JoinResult(_reencode(info, spans, parts, output, settings, provenance, notify), copied=False)
    fmt = container_for(output)
    file = AtomicFile(output, signing_step(output, provenance, notify))
    try:
        frames = _copy(info, spans, parts, file.temp, fmt, settings, provenance)
        if frames == 0:
            raise NoFramesError(output, "no frames were written; the output is not created")
        file.commit()
    except BaseException as exc:
        file.discard()
        if isinstance(exc, (av.FFmpegError, OSError)):
            raise write_error(output, exc, "the video") from exc
        raise
    return JoinResult(frames, copied=True)


def _same_parameters(parts: Sequence[Path]) -> bool:
    described = set()
    for part in parts:
        with av.open(str(part)) as container:
            context = container.streams.video[0].codec_context
            described.add((context.name, context.width, context.height, context.pix_fmt, bytes(context.extradata or b"")))
    return len(described) == 1


def _offset_ticks(info: VideoInfo, span: FrameSpan, time_base: Fraction) -> int:
    """A segment's frames start where the input's first frame was (the writer's shift): move them back to their
    own place, in `time_base` ticks."""
    return round(Fraction(span.start_pts - info.start_pts) * info.time_base / time_base)


def _copy(info: VideoInfo, spans: Sequence[FrameSpan], parts: Sequence[Path], temp: Path, fmt: str,
          settings: EncodeSettings, provenance: ProvenanceLabel | None) -> int:
    options = (LABEL_OPTIONS.get(fmt) if provenance is not None else None) or CONTAINER_OPTIONS.get(fmt, {})
    _, source = audio_source(info.path, info.has_audio, settings)
    frames = 0
    end = 0.0
    with av.open(str(temp), "w", format=fmt, container_options=options) as container:
        if provenance is not None:
            container.metadata.update(provenance.container_tags())
        with av.open(str(parts[0])) as first:
            video = container.add_stream_from_template(first.streams.video[0])
        audio = _audio_track(source, container, fmt, settings)
        container.start_encoding()
        for span, part in zip(spans, parts, strict=True):
            with av.open(str(part)) as segment:
                stream = segment.streams.video[0]
                assert stream.time_base is not None
                offset = _offset_ticks(info, span, stream.time_base)
                for packet in segment.demux(stream):
                    if packet.size == 0 or packet.pts is None:
                        continue
                    packet.pts += offset
                    if packet.dts is not None:
                        packet.dts += offset
                    when = float(packet.pts * stream.time_base)
                    end = max(end, float((packet.pts + (packet.duration or 0)) * stream.time_base))
                    packet.stream = video
                    container.mux(packet)
                    frames += 1
                    if audio is not None:
                        audio.feed_until(when, container.mux)
        if audio is not None:
            audio.finish(end if settings.audio_path is not None else None, container.mux)
    if source is not None:
        source.close()
    return frames


def _audio_track(source: av.container.InputContainer | None, container: OutputContainer, fmt: str,
                 settings: EncodeSettings) -> AudioTrack | None:
    if source is None:
        return None
    stream = source.streams.audio[0]
    name = stream.codec_context.name if stream.codec_context is not None else None
    if name is None:
        return None
    track = AudioTrack(source, container, fmt, settings)
    track.begin(None, Fraction(0))
    return track


def _reencode(info: VideoInfo, spans: Sequence[FrameSpan], parts: Sequence[Path], output: Path,
              settings: EncodeSettings, provenance: ProvenanceLabel | None, notify: Notify) -> int:
    """Decode every segment and encode the frames again into one video, on the input's timestamps."""
    first = probe(parts[0])
    sized = replace(info, width=first.width, height=first.height)
    with VideoWriter(output, sized, settings, notify=notify, provenance=provenance) as writer:
        for span, part in zip(spans, parts, strict=True):
            with VideoReader(part) as reader:
                offset = span.start_pts - info.start_pts
                for frame in reader:
                    pts = round(frame.pts * frame.time_base / info.time_base) + offset
                    duration = round(frame.duration * frame.time_base / info.time_base)
                    writer.write(VideoFrame(frame.index, pts, info.time_base, frame.rgb, duration))
    return writer.frames_written

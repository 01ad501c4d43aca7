"""Video reading and writing: timestamps, audio, rotation, sizes, trimming, rates, encoders, bad inputs, clean-up,
the disk mode, and the memory bound. Every clip is made here from the packaged photos (see clips.py)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from slimfuse.bench.clips import (
    GRACE_HOPPER_FACE,
    audio_only,
    crossing,
    crossing_poses,
    face_box,
    make_clip,
    no_frames,
    pan,
    roll,
    still,
    tone,
    vfr_pattern,
    zoom,
    zoom_poses,
)

from slimfuse.errors import (
    CodecUnavailableError,
    InputCorruptError,
    InputEmptyError,
    InputMissingError,
    NoFramesError,
    NoVideoStreamError,
    UnsupportedTypeError,
    UsageError,
    VideoDecodeStoppedError,
)
from slimfuse.media.temp_frames import TempFrames
from slimfuse.media.video_encoding import check_encoder, crf_for
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import VideoReader
from slimfuse.media.video_writer import VideoWriter

FAST = EncodeSettings(preset="ultrafast")
SIZE = (320, 240)
AUDIO_FRAME_S = 1024 / 48000  # one AAC frame, the longest audio packet these clips hold


@dataclass(frozen=True)
class Scan:
    times: list[Fraction]
    size: tuple[int, int]
    rotation: int
    audio_codec: str | None
    audio_seconds: float | None
    audio_packet_s: float


def scan(path: Path) -> Scan:
    """What a player sees: every frame's presentation time, the picture size, the audio's codec and length."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = [(frame.pts * stream.time_base, frame.width, frame.height, frame.rotation)
                  for frame in container.decode(stream)]
    audio_codec, audio_seconds, packet_s = None, None, 0.0
    with av.open(str(path)) as container:
        if container.streams.audio:
            audio = container.streams.audio[0]
            audio_codec = audio.codec_context.name
            packets = [(p.pts, p.duration) for p in container.demux(audio) if p.pts is not None]
            audio_seconds = float((max(pts + dur for pts, dur in packets) - min(pts for pts, _ in packets))
                                  * audio.time_base)
            packet_s = float(max(dur for _, dur in packets) * audio.time_base)
    return Scan([time for time, *_ in frames], frames[0][1:3], frames[0][3], audio_codec, audio_seconds, packet_s)


def transcode(source: Path, target: Path, settings: EncodeSettings = FAST, start: int = 0, end: int | None = None,
              notices: list[str] | None = None) -> list[int]:
    """Read and write through the streaming API; returns the indexes of the frames that went through."""
    info = probe(source)
    seen = []
    notify = notices.append if notices is not None else (lambda message: None)
    with VideoReader(source, start=start, end=end) as reader, \
            VideoWriter(target, info, settings, trim_start=start, trim_end=end, notify=notify) as writer:
        for frame in reader:
            seen.append(frame.index)
            writer.write(frame)
    return seen


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


# --- timing, audio, geometry ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fps", [24, 25, 30])
def test_constant_rate_timestamps_and_audio_survive(tmp_path: Path, grace_hopper: np.ndarray, fps: int) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 36), fps=fps, audio=True)
    notices: list[str] = []
    transcode(source, tmp_path / "out.mp4", notices=notices)
    before, after = scan(source), scan(tmp_path / "out.mp4")
    assert len(after.times) == 36 and after.times == before.times
    assert after.audio_codec == "aac" and not notices  # copied, not re-encoded
    assert before.audio_seconds is not None and after.audio_seconds is not None
    assert abs(after.audio_seconds - before.audio_seconds) <= AUDIO_FRAME_S


@pytest.mark.parametrize("suffix", [".mp4", ".mkv"])
def test_variable_rate_timestamps_survive(tmp_path: Path, grace_hopper: np.ndarray, suffix: str) -> None:
    pattern = vfr_pattern(30)
    source = make_clip(tmp_path / f"in{suffix}", pan(grace_hopper, SIZE, 30), vfr_pts=pattern, audio=True)
    transcode(source, tmp_path / f"out{suffix}")
    before, after = scan(source), scan(tmp_path / f"out{suffix}")
    assert after.times == before.times
    assert len(set(np.diff([float(t) for t in after.times]).round(4))) > 3  # really variable
    assert probe(tmp_path / f"out{suffix}").duration == pytest.approx(probe(source).duration, abs=1e-3)


@pytest.mark.parametrize("suffix", [".mp4", ".mov", ".mkv", ".webm", ".avi"])
def test_every_container_round_trips(tmp_path: Path, grace_hopper: np.ndarray, suffix: str) -> None:
    codec = "libvpx-vp9" if suffix == ".webm" else "libx264"
    source = make_clip(tmp_path / f"in{suffix}", pan(grace_hopper, SIZE, 20), fps=25, audio=True, codec=codec)
    info = probe(source)
    assert (info.width, info.height, info.has_audio, info.fps) == (*SIZE, True, 25)
    transcode(source, tmp_path / f"out{suffix}")
    before, after = scan(source), scan(tmp_path / f"out{suffix}")
    assert len(after.times) == 20 and after.audio_codec is not None
    if suffix == ".avi":
        # AVI stores no presentation times: the frame count and rate are what it keeps.
        assert np.allclose(np.diff([float(t) for t in after.times]), 1 / 25)
    else:
        assert after.times == before.times


def test_pixels_survive_a_round_trip(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    """Colour matrix and range match on both sides: a still frame comes back as it went in."""
    picture = next(still(grace_hopper, SIZE, 1))
    source = make_clip(tmp_path / "in.mkv", [picture] * 3, crf=4)
    transcode(source, tmp_path / "out.mkv", EncodeSettings(preset="ultrafast", quality=96))
    with VideoReader(tmp_path / "out.mkv") as reader:
        frames = [frame.rgb for frame in reader]
    error = frames[1].astype(int) - picture.astype(int)
    # A wrong matrix (BT.601 read as BT.709) shifts channel means by about 4 levels, a wrong range by 5-10.
    assert np.abs(error).mean() < 2.5 and np.abs(error.reshape(-1, 3).mean(axis=0)).max() < 0.8


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_rotation_tag_is_applied(tmp_path: Path, grace_hopper: np.ndarray, rotation: int) -> None:
    upright = list(pan(grace_hopper, SIZE, 6))
    # Stored turned the other way, as a phone stores it; the tag says how to turn it back.
    stored = [np.rot90(frame, k=rotation // 90) for frame in upright]
    source = make_clip(tmp_path / "in.mp4", stored, rotation=rotation, crf=10)
    info = probe(source)
    assert info.rotation == rotation and (info.width, info.height) == SIZE
    with VideoReader(source) as reader:
        first = next(iter(reader))
    assert first.rgb.shape == (SIZE[1], SIZE[0], 3)
    assert np.abs(first.rgb.astype(int) - upright[0].astype(int)).mean() < 4
    transcode(source, tmp_path / "out.mp4")
    after = scan(tmp_path / "out.mp4")
    assert after.size == SIZE and after.rotation == 0


@pytest.mark.parametrize(("encoder", "suffix", "expected"), [
    ("libx264", ".mp4", (322, 242)),  # 4:2:0 H.264 cannot store odd sizes: one replicated row and column
    ("libvpx-vp9", ".webm", (321, 241)),  # VP9 can
])
def test_odd_sizes_work(tmp_path: Path, grace_hopper: np.ndarray, encoder: str, suffix: str,
                        expected: tuple[int, int]) -> None:
    frames = list(pan(grace_hopper, (321, 241), 5))
    source = make_clip(tmp_path / "in.mkv", frames, crf=6)
    assert (probe(source).width, probe(source).height) == (321, 241)
    transcode(source, tmp_path / f"out{suffix}", EncodeSettings(preset="ultrafast", encoder=encoder, quality=90))
    assert scan(tmp_path / f"out{suffix}").size == expected
    with VideoReader(tmp_path / f"out{suffix}") as reader:
        first = next(iter(reader)).rgb
    assert np.abs(first[:241, :321].astype(int) - frames[0].astype(int)).mean() < 4


@pytest.mark.parametrize("target", ["out.mp4", "out.webm"])  # audio copied, audio re-encoded
def test_trim_cuts_video_and_audio_together(tmp_path: Path, grace_hopper: np.ndarray, target: str) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 50), fps=25, audio=True)
    seen = transcode(source, tmp_path / target, start=10, end=30)
    assert seen == list(range(10, 30))
    before, after = scan(source), scan(tmp_path / target)
    assert after.times == [time - before.times[10] for time in before.times[10:30]]
    assert after.audio_seconds == pytest.approx(20 / 25, abs=AUDIO_FRAME_S)


def test_trim_past_the_end_is_refused(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 5))
    with pytest.raises(UsageError):
        VideoReader(source, start=9)
    with pytest.raises(UsageError):
        VideoReader(source, start=3, end=3)


@pytest.mark.parametrize("fps", [Fraction(30), Fraction(10)])
def test_fps_override_resamples_by_timestamp(tmp_path: Path, grace_hopper: np.ndarray, fps: Fraction) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 50), fps=25, audio=True)
    transcode(source, tmp_path / "out.mp4", EncodeSettings(preset="ultrafast", fps=fps))
    after = scan(tmp_path / "out.mp4")
    assert after.times == [Fraction(k) / fps for k in range(int(2 * fps))]  # 2 s either way
    assert after.audio_seconds == pytest.approx(2.0, abs=AUDIO_FRAME_S)


def test_fps_override_makes_variable_rate_constant(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    pattern = vfr_pattern(24)
    frames = [np.full((48, 64, 3), 10 * index, np.uint8) for index in range(24)]
    source = make_clip(tmp_path / "in.mkv", frames, vfr_pts=pattern, crf=0)
    transcode(source, tmp_path / "out.mkv", EncodeSettings(preset="ultrafast", fps=Fraction(25), quality=100))
    with VideoReader(tmp_path / "out.mkv") as reader:
        shown = [int(round(frame.rgb.mean() / 10)) for frame in reader]
    times = [Fraction(pts, 90000) for pts in pattern]
    # Slot k shows the input frame on screen at k/25 s.
    expected = [max(i for i, time in enumerate(times) if time <= Fraction(k, 25)) for k in range(len(shown))]
    assert shown == expected and len(set(shown)) < 24 and len(shown) == 29


def test_scale(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 5))
    transcode(source, tmp_path / "half.mp4", EncodeSettings(preset="ultrafast", scale=0.5))
    transcode(source, tmp_path / "odd.mp4", EncodeSettings(preset="ultrafast", scale=0.33))
    assert scan(tmp_path / "half.mp4").size == (160, 120)
    assert scan(tmp_path / "odd.mp4").size == (106, 80)  # nearest even sizes to 105.6 x 79.2


def test_skip_audio(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 5), audio=True)
    transcode(source, tmp_path / "out.mp4", EncodeSettings(preset="ultrafast", skip_audio=True))
    assert scan(tmp_path / "out.mp4").audio_codec is None


@pytest.mark.parametrize(("source_name", "audio_codec", "target_name", "expected"), [
    ("in.mp4", "aac", "out.webm", "opus"),  # webm holds only opus and vorbis
    ("in.mkv", "pcm_s16le", "out.mp4", "aac"),  # refused up front
    ("in.mkv", "flac", "out.mov", "aac"),  # listed as possible, refused by the muxer: the file is started again
])
def test_audio_the_container_cannot_hold_is_reencoded_with_a_notice(tmp_path: Path, grace_hopper: np.ndarray,
                                                                    source_name: str, audio_codec: str,
                                                                    target_name: str, expected: str) -> None:
    source = make_clip(tmp_path / source_name, pan(grace_hopper, SIZE, 25), audio=True, audio_codec=audio_codec)
    notices: list[str] = []
    transcode(source, tmp_path / target_name, notices=notices)
    after = scan(tmp_path / target_name)
    assert after.audio_codec == expected and after.audio_seconds == pytest.approx(1.0, abs=0.03)
    assert len(notices) == 1 and audio_codec in notices[0] and "re-encoding" in notices[0] and "\n" not in notices[0]
    assert after.times == scan(source).times


# --- encoders ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("encoder", "suffix"), [
    ("libx264", ".mp4"), ("libx265", ".mp4"), ("libvpx-vp9", ".webm"), ("h264_nvenc", ".mp4"), ("hevc_nvenc", ".mkv"),
])
def test_each_encoder_works_or_is_refused_clearly(tmp_path: Path, grace_hopper: np.ndarray, encoder: str,
                                                  suffix: str) -> None:
    source = make_clip(tmp_path / "in.mkv", pan(grace_hopper, SIZE, 10), fps=25)
    settings = EncodeSettings(encoder=encoder, preset="ultrafast")
    try:
        check_encoder(encoder)
    except CodecUnavailableError as error:
        assert encoder in str(error) and "libx264" in str(error)  # says what is there instead
        with pytest.raises(CodecUnavailableError):
            VideoWriter(tmp_path / f"out{suffix}", probe(source), settings)
        assert sorted(path.name for path in tmp_path.iterdir()) == ["in.mkv"]
        return
    transcode(source, tmp_path / f"out{suffix}", settings)
    assert scan(tmp_path / f"out{suffix}").times == scan(source).times


def test_quality_maps_to_crf_and_file_size(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    assert [crf_for("libx264", q) for q in (0, 50, 80, 100)] == [51, 26, 10, 0]
    assert [crf_for("libvpx-vp9", q) for q in (0, 50, 100)] == [63, 32, 0]
    assert crf_for("h264_nvenc", 100) == 1  # cq 0 would mean "let the encoder choose"
    source = make_clip(tmp_path / "in.mkv", pan(grace_hopper, SIZE, 10))
    sizes = []
    for quality in (20, 50, 80):
        transcode(source, tmp_path / f"q{quality}.mp4", EncodeSettings(preset="ultrafast", quality=quality))
        sizes.append((tmp_path / f"q{quality}.mp4").stat().st_size)
    assert sizes[0] < sizes[1] < sizes[2]


def test_bad_settings_are_refused(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    for bad in ({"quality": 101}, {"preset": "warp"}, {"encoder": "libfoo"}, {"scale": 0}, {"fps": Fraction(0)}):
        with pytest.raises(UsageError):
            EncodeSettings(**bad)  # type: ignore[arg-type]
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 3))
    with pytest.raises(UnsupportedTypeError, match="libvpx-vp9"):
        VideoWriter(tmp_path / "out.webm", probe(source), EncodeSettings(encoder="libx264"))
    with pytest.raises(UnsupportedTypeError):
        VideoWriter(tmp_path / "out.flv", probe(source))


# --- bad inputs ----------------------------------------------------------------------------------------------------

def test_missing_empty_and_garbage_files(tmp_path: Path) -> None:
    with pytest.raises(InputMissingError):
        probe(tmp_path / "nothing.mp4")
    (tmp_path / "empty.mp4").write_bytes(b"")
    with pytest.raises(InputEmptyError):
        probe(tmp_path / "empty.mp4")
    (tmp_path / "noise.mp4").write_bytes(np.random.default_rng(0).bytes(50_000))
    with pytest.raises(InputCorruptError, match="noise.mp4"):
        probe(tmp_path / "noise.mp4")
    (tmp_path / "clip.txt").write_bytes(b"x")
    with pytest.raises(UnsupportedTypeError):
        probe(tmp_path / "clip.txt")


def test_audio_only_zero_frames_and_unknown_codec(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    with pytest.raises(NoVideoStreamError, match="audio-only"):
        probe(audio_only(tmp_path / "voice.mp4"))
    with pytest.raises(NoVideoStreamError, match="audio-only"):
        probe(audio_only(tmp_path / "voice.webm"))
    with pytest.raises(NoFramesError, match="empty.avi"):
        probe(no_frames(tmp_path / "empty.avi"))
    clip = make_clip(tmp_path / "clip.avi", pan(grace_hopper, (64, 48), 3), codec="mpeg4")
    # The same file with a codec tag no decoder knows.
    (tmp_path / "alien.avi").write_bytes(clip.read_bytes().replace(b"FMP4", b"ZQZQ"))
    with pytest.raises(CodecUnavailableError, match="alien.avi"):
        probe(tmp_path / "alien.avi")


def test_truncated_mp4_without_its_index_is_corrupt(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    clip = make_clip(tmp_path / "clip.mp4", pan(grace_hopper, SIZE, 20))  # index at the end, as cameras write
    (tmp_path / "cut.mp4").write_bytes(clip.read_bytes()[: clip.stat().st_size // 2])
    with pytest.raises(InputCorruptError, match="cut.mp4"):
        probe(tmp_path / "cut.mp4")


@pytest.mark.parametrize(("suffix", "faststart"), [(".mkv", False), (".mp4", True)])
def test_truncated_video_yields_what_decodes_then_names_the_frame(tmp_path: Path, grace_hopper: np.ndarray,
                                                                 suffix: str, faststart: bool) -> None:
    clip = make_clip(tmp_path / f"clip{suffix}", pan(grace_hopper, SIZE, 40), audio=True, faststart=faststart)
    cut = tmp_path / f"cut{suffix}"
    cut.write_bytes(clip.read_bytes()[: int(clip.stat().st_size * 0.6)])
    info = probe(cut)
    frames = []
    writer = VideoWriter(tmp_path / "out.mp4", info, FAST)
    with VideoReader(cut) as reader, pytest.raises(VideoDecodeStoppedError) as stopped:
        for frame in reader:
            frames.append(frame.index)
            writer.write(frame)
    assert 5 < len(frames) < 40 and frames == list(range(len(frames)))
    assert stopped.value.frame_index == len(frames) and f"frame {len(frames)}" in str(stopped.value)
    assert stopped.value.exit_code == 33 and str(cut) in str(stopped.value)
    # The pipeline may keep what decoded (close, here under a name of its own) or drop it (abort).
    writer.close(tmp_path / "out.partial.mp4")
    assert len(scan(tmp_path / "out.partial.mp4").times) == len(frames)
    assert not (tmp_path / "out.mp4").exists() and leftovers(tmp_path) == []


def test_temp_frames_keep_what_decoded_before_an_error(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    clip = make_clip(tmp_path / "clip.mkv", pan(grace_hopper, SIZE, 30))
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(clip.read_bytes()[: int(clip.stat().st_size * 0.6)])
    with TempFrames("jpg", root=tmp_path) as frames, VideoReader(cut) as reader:
        with pytest.raises(VideoDecodeStoppedError) as stopped:
            frames.extract(reader)
        assert len(frames) == stopped.value.frame_index == len(list(frames)) > 5
        assert json.loads((frames.path / "timing.json").read_text())["frames"] == len(frames)


# --- clean-up --------------------------------------------------------------------------------------------------------

def test_output_appears_only_when_complete(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 10), audio=True)
    target = tmp_path / "out.mp4"
    with VideoReader(source) as reader, VideoWriter(target, probe(source), FAST) as writer:
        for frame in reader:
            writer.write(frame)
            assert not target.exists()
        assert len(leftovers(tmp_path)) == 1  # the temporary file beside it
    assert target.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_error_or_interrupt_leaves_no_output(tmp_path: Path, grace_hopper: np.ndarray,
                                             error: type[BaseException]) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 30), audio=True)

    def process(index: int) -> None:  # the frame callback a pipeline runs
        if index == 12:
            raise error("stop")

    with pytest.raises(error):
        with VideoReader(source, queue_size=2) as reader, VideoWriter(tmp_path / "out.mp4", probe(source), FAST) as w:
            for frame in reader:
                process(frame.index)
                w.write(frame)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.mp4"]
    assert not reader._thread.is_alive() and not w._thread.is_alive()


def test_stopping_early_ends_the_decode_thread(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 60))
    with VideoReader(source, queue_size=2) as reader:
        for frame in reader:
            if frame.index == 3:
                break
    assert not reader._thread.is_alive()


def test_unwritable_output_is_refused_before_work(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    from slimfuse.errors import OutputDirMissingError, OutputIsInputError

    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 3))
    with pytest.raises(OutputDirMissingError):
        VideoWriter(tmp_path / "no" / "out.mp4", probe(source))
    with pytest.raises(OutputIsInputError):
        VideoWriter(source, probe(source))


# --- the disk mode -----------------------------------------------------------------------------------------------

def test_temp_frames_round_trip_keeps_timing_and_audio(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    pattern = vfr_pattern(12)
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 12), vfr_pts=pattern, audio=True)
    temp_root = tmp_path / "temp"
    temp_root.mkdir()
    info = probe(source)
    with TempFrames("png", root=temp_root) as frames, VideoReader(source) as reader:
        assert frames.extract(reader) == 12
        names = sorted(path.name for path in frames.path.iterdir())
        assert names[0] == "00000000_pts0_dur1500.png" and "timing.json" in names
        assert json.loads((frames.path / "timing.json").read_text())["time_base"] == "1/90000"
        for frame in frames:
            frames.replace(frame.index, np.full_like(frame.rgb, 200))
        with VideoWriter(tmp_path / "out.mp4", info, FAST) as writer:
            frames.assemble(writer)
    after = scan(tmp_path / "out.mp4")
    assert after.times == scan(source).times and after.audio_codec == "aac"
    assert list(temp_root.iterdir()) == []
    with VideoReader(tmp_path / "out.mp4") as reader:
        assert abs(float(next(iter(reader)).rgb.mean()) - 200) < 2


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_temp_frames_are_removed_on_error_and_interrupt(tmp_path: Path, grace_hopper: np.ndarray,
                                                       error: type[BaseException]) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 10))
    temp_root = tmp_path / "temp"
    temp_root.mkdir()
    with pytest.raises(error):
        with TempFrames("jpg", root=temp_root) as frames, VideoReader(source) as reader:
            frames.extract(reader)
            for frame in frames:
                if frame.index == 4:
                    raise error("stop")
    assert list(temp_root.iterdir()) == []


def test_keep_temp_keeps_the_frames(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    source = make_clip(tmp_path / "in.mp4", pan(grace_hopper, SIZE, 4))
    notices: list[str] = []
    with TempFrames("bmp", root=tmp_path, keep=True, notify=notices.append) as frames, VideoReader(source) as reader:
        frames.extract(reader)
        kept = frames.path
    assert len(list(kept.glob("*.bmp"))) == 4 and str(kept) in notices[0]


# --- memory ----------------------------------------------------------------------------------------------------------

# Each child reports its own peak (peak_rss_mb reads VmHWM: getrusage would report this large parent's).
CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from slimfuse.memory.probe import peak_rss_mb
    from slimfuse.media.formats import EncodeSettings
    from slimfuse.media.video_probe import probe
    from slimfuse.media.video_reader import VideoReader
    from slimfuse.media.video_writer import VideoWriter
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    info = probe(source)
    with VideoReader(source) as reader, VideoWriter(target, info, EncodeSettings(preset="ultrafast")) as writer:
        for frame in reader:
            writer.write(frame)
    print(peak_rss_mb())
""")


@pytest.mark.slow
def test_peak_memory_does_not_grow_with_length(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    peaks = {}
    for count in (150, 1500):
        source = make_clip(tmp_path / f"in{count}.mp4", pan(grace_hopper, (640, 360), count), audio=True)
        result = subprocess.run([sys.executable, "-c", CHILD, str(source), str(tmp_path / f"out{count}.mp4")],
                                capture_output=True, text=True, check=True)
        peaks[count] = float(result.stdout.split()[-1])
    assert peaks[1500] <= peaks[150] * 1.10, peaks


# --- the clip makers -------------------------------------------------------------------------------------------------

def test_clip_makers_move_the_face(grace_hopper: np.ndarray, astronaut: np.ndarray) -> None:
    size = (401, 301)  # odd on purpose
    for frames in (pan(grace_hopper, size, 5), zoom(grace_hopper, size, 5), roll(grace_hopper, size, 5),
                   crossing(grace_hopper, astronaut, size, 5)):
        shots = list(frames)
        assert len(shots) == 5 and all(shot.shape == (301, 401, 3) and shot.dtype == np.uint8 for shot in shots)
        assert np.abs(shots[0].astype(int) - shots[-1].astype(int)).mean() > 5  # the camera moved
    first, second = crossing_poses(size, 5)
    assert first[0].cx < second[0].cx and first[-1].cx > second[-1].cx  # they pass each other
    widths = [face_box(GRACE_HOPPER_FACE, pose)[2] - face_box(GRACE_HOPPER_FACE, pose)[0] for pose in
              zoom_poses(size, 5)]
    assert widths == sorted(widths) and widths[-1] > 2 * widths[0]
    assert tone(0.5).shape == (2, 24000)

"""FaceFusion's audio options through the real command line, on a clip of Grace Hopper with a 440 Hz tone (0.3 peak):
--output-audio-volume scales the samples, --output-audio-encoder picks the codec (or is refused with the ones the
container holds), --output-audio-quality sets the bit rate."""
from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from slimfuse.bench.clips import make_clip, still
from slimfuse.cli.main import main

TONE_PEAK = 0.3


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    folder = tmp_path_factory.mktemp("audio")
    return make_clip(folder / "clip.mp4", still(grace_hopper, size=(320, 240), count=12, face_px=90), fps=12,
                     audio=True)


def _swap(source: Path, clip: Path, output: Path, *options: str) -> int:
    return main(["swap", "-s", str(source), "-t", str(clip), "-o", str(output), "--quiet", *options])


def _samples(path: Path) -> tuple[str, np.ndarray]:
    """The audio codec's name and its first channel's samples as floats (integer samples scaled to -1..1)."""
    with av.open(str(path)) as container:
        name = container.streams.audio[0].codec_context.codec.canonical_name  # mp3, not its decoder's mp3float
        parts = []
        for frame in container.decode(audio=0):
            data = frame.to_ndarray().reshape(frame.layout.nb_channels, -1)[0] if frame.format.is_planar \
                else frame.to_ndarray().reshape(-1, frame.layout.nb_channels)[:, 0]
            if np.issubdtype(data.dtype, np.integer):
                data = data / float(np.iinfo(data.dtype).max)
            parts.append(data.astype(np.float64))
    return name, np.concatenate(parts)


def _bit_rate(path: Path) -> float:
    """Bits per second of the audio stream's packets."""
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        packets = [packet for packet in container.demux(stream) if packet.size]
        seconds = float(sum(packet.duration for packet in packets) * stream.time_base)
        return 8 * sum(packet.size for packet in packets) / seconds


@pytest.mark.parametrize(("volume", "peak"), [(None, TONE_PEAK), (50, TONE_PEAK / 2), (0, 0.0)])
def test_the_volume_scales_the_audio(tmp_path: Path, astronaut_path: Path, clip: Path, volume: int | None,
                                     peak: float) -> None:
    output = tmp_path / "out.mp4"
    extra = () if volume is None else ("--output-audio-volume", str(volume))
    assert _swap(astronaut_path, clip, output, *extra) == 0
    _, samples = _samples(output)
    middle = samples[len(samples) // 4: 3 * len(samples) // 4]  # clear of the encoder's priming and tail
    assert np.abs(middle).max() == pytest.approx(peak, abs=0.02)
    if volume == 0:
        assert np.abs(samples).max() < 1e-4  # silence, not a quiet tone


@pytest.mark.parametrize(("encoder", "suffix", "codec"), [("flac", ".mkv", "flac"), ("libopus", ".mp4", "opus"),
                                                          ("pcm_s16le", ".mov", "pcm_s16le"),
                                                          ("libmp3lame", ".avi", "mp3")])
def test_the_encoder_sets_the_codec_and_keeps_the_sound(tmp_path: Path, astronaut_path: Path, clip: Path,
                                                        encoder: str, suffix: str, codec: str) -> None:
    output = tmp_path / f"out{suffix}"
    assert _swap(astronaut_path, clip, output, "--output-audio-encoder", encoder) == 0
    name, samples = _samples(output)
    assert name == codec
    assert np.abs(samples[len(samples) // 4: 3 * len(samples) // 4]).max() == pytest.approx(TONE_PEAK, abs=0.02)


def test_an_encoder_the_container_cannot_hold_is_refused_with_those_it_can(tmp_path: Path, astronaut_path: Path,
                                                                           clip: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "out.webm"
    assert _swap(astronaut_path, clip, output, "--output-audio-encoder", "aac") == 7
    err = capsys.readouterr().err
    assert "a '.webm' file cannot hold aac audio (use --output-audio-encoder libopus" in err
    assert not output.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("quality", "kbps"), [(0, 64), (50, 192), (100, 320)])
def test_the_quality_sets_the_bit_rate(tmp_path: Path, astronaut_path: Path, clip: Path, quality: int,
                                       kbps: int) -> None:
    """libmp3lame keeps a constant bit rate, so the file shows the one asked for (64 + 2.56 kb/s per point)."""
    output = tmp_path / "out.mp4"
    assert _swap(astronaut_path, clip, output, "--output-audio-encoder", "libmp3lame", "--output-audio-quality",
                 str(quality)) == 0
    assert _bit_rate(output) == pytest.approx(kbps * 1000, rel=0.03)

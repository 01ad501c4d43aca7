"""Audio content and sync through the real command line: a clip whose picture flashes white at irregular
moments while its sound clicks (a 1 kHz burst) at the same moments. After the audio is copied, re-encoded,
trimmed, or the frame rate changed, every flash that remains still has its click within one frame, and the clicks
are still 20 ms bursts of 1 kHz: nothing shifted, stretched, dropped or garbled."""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from slimfuse.bench.clips import AUDIO_RATE
from slimfuse.cli.main import main

FPS = 25
FRAMES = 60
FLASHES = (5, 17, 31, 44, 52)  # first frame of each flash; irregular, so no offset lines up with another click
FLASH_FRAMES = 3  # 120 ms: still seen at 10 frames/s
BURST_S, BURST_HZ, BURST_LEVEL = 0.02, 1000.0, 0.5


def _write_clip(path: Path) -> Path:
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=FPS, options={"preset": "ultrafast", "crf": "18"})
        video.width, video.height, video.pix_fmt = 160, 120, "yuv420p"
        audio = container.add_stream("aac", rate=AUDIO_RATE, layout="stereo")
        for index in range(FRAMES):
            lit = any(start <= index < start + FLASH_FRAMES for start in FLASHES)
            frame = av.VideoFrame.from_ndarray(np.full((120, 160, 3), 240 if lit else 40, np.uint8), format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, FPS)
            container.mux(video.encode(frame))
        container.mux(video.encode())
        samples = _clicks(FRAMES / FPS, [start / FPS for start in FLASHES])
        for start in range(0, samples.shape[1], 1024):
            chunk = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples[:, start:start + 1024]), format="fltp",
                                               layout="stereo")
            chunk.sample_rate, chunk.pts, chunk.time_base = AUDIO_RATE, start, Fraction(1, AUDIO_RATE)
            container.mux(audio.encode(chunk))
        container.mux(audio.encode())
    return path


def _clicks(seconds: float, times: list[float]) -> np.ndarray:
    mono = np.zeros(int(round(seconds * AUDIO_RATE)), np.float32)
    burst = np.arange(int(BURST_S * AUDIO_RATE)) / AUDIO_RATE
    for time in times:
        start = int(round(time * AUDIO_RATE))
        mono[start:start + len(burst)] = BURST_LEVEL * np.sin(2 * math.pi * BURST_HZ * burst)
    return np.stack([mono, mono])


def _flash_times(path: Path) -> list[float]:
    """When each flash starts in the output's picture (frame times in seconds)."""
    with av.open(str(path)) as container:
        lit = [(float(frame.time), frame.to_ndarray(format="gray").mean() > 140)
               for frame in container.decode(video=0)]
    return [time for index, (time, on) in enumerate(lit) if on and (index == 0 or not lit[index - 1][1])]


def _bursts(path: Path) -> list[tuple[float, float, float, float]]:
    """Each burst in the output's sound: (start s, length s, peak, strongest frequency Hz)."""
    with av.open(str(path)) as container:
        frames = list(container.decode(audio=0))
        rate = container.streams.audio[0].rate
    start = float(frames[0].time)
    mono = np.concatenate([frame.to_ndarray().reshape(frame.layout.nb_channels, -1)[0] for frame in frames])
    loud = np.abs(mono) > 0.1
    edges = np.flatnonzero(loud)
    bursts = []
    while edges.size:
        first = edges[0]
        inside = edges[edges < first + int(0.1 * rate)]
        part = mono[first:inside[-1] + 1]
        spectrum = np.abs(np.fft.rfft(part, n=rate // 10))
        bursts.append((start + first / rate, (inside[-1] - first) / rate, float(np.abs(part).max()),
                       float(np.argmax(spectrum) * 10)))
        edges = edges[edges >= first + int(0.1 * rate)]
    return bursts


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_clip(tmp_path_factory.mktemp("sync") / "flashes.mp4")


CASES = {
    "copied": (".mkv", [], 0, 1 / FPS),
    "re-encoded": (".webm", [], 0, 1 / FPS),
    "trimmed": (".mp4", ["--trim-frame-start", "12", "--trim-frame-end", "48"], 12, 1 / FPS),
    "at 10 frames/s": (".mp4", ["--output-video-fps", "10"], 0, 1 / 10),
}


@pytest.mark.parametrize("case", list(CASES))
def test_clicks_keep_their_content_and_their_flashes(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     clip: Path, astronaut_path: Path, case: str) -> None:
    suffix, options, first_frame, one_frame = CASES[case]
    output = tmp_path / f"out{suffix}"
    assert main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(output), "--quiet", *options]) == 0
    capsys.readouterr()
    end = FRAMES if "--trim-frame-end" not in options else int(options[options.index("--trim-frame-end") + 1])
    kept = [(start - first_frame) / FPS for start in FLASHES if first_frame <= start < end]
    flashes, bursts = _flash_times(output), _bursts(output)
    assert len(flashes) == len(kept) == len(bursts), (flashes, bursts)
    for expected, flash, (start, length, peak, hz) in zip(kept, flashes, bursts, strict=True):
        assert abs(start - expected) < 1 / FPS, (start, expected)  # where the input had it
        assert abs(start - flash) < one_frame, (start, flash)  # with its flash
        assert 0.015 < length < 0.025 and 0.35 < peak < 0.65 and abs(hz - BURST_HZ) <= 20, (length, peak, hz)

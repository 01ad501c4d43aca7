"""Generated voices for the lip syncer's tests: syllables of a buzz (a 130 Hz sawtooth, rich in harmonics as a
voiced vowel is) between silences, as 48 kHz stereo int16 samples or a file, the silent clips they dub, and the
sync of a dubbed output: how well the mouth opening of each output frame (black pixels in the face's box, the
mouth stand-in's) follows the loudness of the output's own sound in the 0.2 s from that frame's time, with the
sound shifted by a few frames either way."""
from __future__ import annotations

from typing import Any

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

RATE = 48_000
PITCH_HZ = 130.0
WINDOW_S = 0.2
"""What a frame's mel window hears: the sound from its time on."""
SHIFTS = tuple(round(step * 0.04, 2) for step in range(-4, 5))
"""Shifts of the sound (s) the sync is measured at: a frame of 25 frames/s apart."""
Syllable = tuple[float, float, float]
"""(start s, end s, level 0-1)."""


def buzz(seconds: float, syllables: Sequence[Syllable]) -> np.ndarray:
    """RATE stereo int16 samples (n x 2): silence with a buzz at `level` during each syllable (5 ms ramps)."""
    time = np.arange(round(seconds * RATE)) / RATE
    saw = 2 * ((time * PITCH_HZ) % 1) - 1
    envelope = np.zeros_like(time)
    ramp = 0.005
    for start, end, level in syllables:
        rise = np.clip((time - start) / ramp, 0, 1) * np.clip((end - time) / ramp, 0, 1)
        envelope = np.maximum(envelope, level * rise)
    mono = (saw * envelope * 0.6 * 32767).astype(np.int16)
    return np.stack([mono, mono], axis=1)


def with_tone(samples: np.ndarray, start: float, end: float, hz: float, level: float) -> np.ndarray:
    """`samples` with a sine of `hz` at `level` (0-1 of full scale) added from `start` to `end` s (music, say)."""
    time = np.arange(samples.shape[0]) / RATE
    tone = level * 32767 * np.sin(2 * np.pi * hz * time) * ((time >= start) & (time < end))
    return np.clip(samples + tone[:, None], -32768, 32767).astype(np.int16)


def write_sound(path: Path, samples: np.ndarray, codec: str = "pcm_s16le") -> Path:
    """`samples` (RATE stereo int16) into an audio file (.wav by default)."""
    with av.open(str(path), "w") as container:
        _mux_sound(container, container.add_stream(codec, rate=RATE, layout="stereo"), samples)
    return path


def _mux_sound(container: Any, stream: Any, samples: np.ndarray) -> None:
    """`samples` (RATE stereo int16) encoded into `stream` of `container`, in 1024-sample frames, then flushed."""
    for start in range(0, samples.shape[0], 1024):
        chunk = np.ascontiguousarray(samples[start:start + 1024].reshape(1, -1))
        frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="stereo")
        frame.sample_rate, frame.pts, frame.time_base = RATE, start, Fraction(1, RATE)
        container.mux(stream.encode(frame))
    container.mux(stream.encode())


def write_still_clip(path: Path, picture: np.ndarray, times: Sequence[float], samples: np.ndarray | None = None
                     ) -> Path:
    """A lossless clip (.mkv, FFV1) showing `picture` at each of `times` (seconds: a variable rate when they are
    uneven), with `samples` as its sound when given."""
    base = Fraction(1, 1000)
    with av.open(str(path), "w") as container:
        video = container.add_stream("ffv1", rate=25)
        video.width, video.height, video.pix_fmt = picture.shape[1], picture.shape[0], "yuv444p"
        video.time_base = video.codec_context.time_base = base
        audio = container.add_stream("pcm_s16le", rate=RATE, layout="stereo") if samples is not None else None
        for time in times:
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts, frame.time_base = round(Fraction(time) / base), base
            container.mux(video.encode(frame))
        container.mux(video.encode())
        if audio is not None and samples is not None:
            _mux_sound(container, audio, samples)
    return path


def output_sound(path: Path) -> tuple[np.ndarray, float]:
    """The file's first audio stream as mono float samples at RATE, and its first sample's time."""
    with av.open(str(path)) as container:
        resampler = av.AudioResampler(format="flt", layout="mono", rate=RATE)
        frames = list(container.decode(audio=0))
        start = float(frames[0].time)
        parts = [out.to_ndarray().ravel() for frame in frames for out in resampler.resample(frame)]
        parts += [out.to_ndarray().ravel() for out in resampler.resample(None)]
    return np.concatenate(parts), start


def loudness(sound: np.ndarray, start: float, time: float) -> float:
    """RMS of the sound from `time` to `time` + WINDOW_S."""
    first = max(0, round((time - start) * RATE))
    part = sound[first:first + round(WINDOW_S * RATE)]
    return float(np.sqrt(np.mean(part ** 2))) if part.size else 0.0


def sync_scores(path: Path, box: Sequence[float], shifts: Sequence[float] = SHIFTS
                ) -> tuple[np.ndarray, dict[float, float]]:
    """The output's frame times, and for each shift the correlation of the frames' mouth openings (dark pixels in
    `box`, x1 y1 x2 y2, beyond the first frame's) with the loudness of the output's sound at their time + shift."""
    x1, y1, x2, y2 = (int(value) for value in box)
    with av.open(str(path)) as container:
        pictures = [(float(frame.time), frame.to_ndarray(format="rgb24")[y1:y2, x1:x2])
                    for frame in container.decode(video=0)]
    times = np.array([time for time, _ in pictures])
    dark = np.array([(rgb.max(axis=2) < 40).sum() for _, rgb in pictures], dtype=float)
    openings = dark - dark.min()
    sound, start = output_sound(path)
    scores = {shift: float(np.corrcoef(openings, [loudness(sound, start, time + shift) for time in times])[0, 1])
              for shift in shifts}
    return times, scores


def assert_in_sync(scores: dict[float, float]) -> None:
    """The mouth follows the sound best at no shift (within a frame), closely, and clearly worse 4 frames off."""
    best = max(scores, key=scores.__getitem__)
    assert abs(best) <= 0.04 and scores[best] > 0.9, scores
    assert scores[0.0] - scores[0.16] > 0.1 and scores[0.0] - scores[-0.16] > 0.1, scores

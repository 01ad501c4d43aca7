"""Generated voices for the lip syncer's tests: syllables of a buzz (a 130 Hz sawtooth, rich in harmonics as a
voiced vowel is) between silences, as 48 kHz stereo int16 samples or a file, and the silent clips they dub."""
from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

RATE = 48_000
PITCH_HZ = 130.0
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


def write_sound(path: Path, samples: np.ndarray, codec: str = "pcm_s16le") -> Path:
    """`samples` (RATE stereo int16) into an audio file (.wav by default)."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=RATE, layout="stereo")
        for start in range(0, samples.shape[0], 1024):
            chunk = np.ascontiguousarray(samples[start:start + 1024].reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="stereo")
            frame.sample_rate, frame.pts, frame.time_base = RATE, start, Fraction(1, RATE)
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


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
            for start in range(0, samples.shape[0], 1024):
                chunk = np.ascontiguousarray(samples[start:start + 1024].reshape(1, -1))
                sound = av.AudioFrame.from_ndarray(chunk, format="s16", layout="stereo")
                sound.sample_rate, sound.pts, sound.time_base = RATE, start, Fraction(1, RATE)
                container.mux(audio.encode(sound))
            container.mux(audio.encode())
    return path

"""A sound track as the lip syncer hears it: decoded with PyAV, turned into a mel spectrogram with numpy, and cut
into the window of each video frame's time.

The recipe is FaceFusion 3.8.1's (`facefusion/audio.py`, `read_voice`): the sound decoded to 48 kHz 16-bit stereo,
resampled to 16 kHz through the Fourier transform, the channels averaged, scaled to a peak of 1, pre-emphasised
(y[n] = x[n] - 0.97 x[n-1]), a short-time Fourier transform of 800-sample periodic Hann windows every 200 samples
(80 columns a second, the signal padded by half a window at each end, the spectrum divided by the window's sum),
its magnitudes through 80 triangular mel filters from 55 Hz to 7.6 kHz. A frame at `t` seconds gets the 16 columns
(0.2 s) from column floor(80 t): FaceFusion's window of frame k at frame rate f is the one ending at column
floor(80 (k + k0) / f), k0 the first k with 80 k / f >= 16, which is the same at 25, 30, 50 and 60 frames/s; here
the window follows the frame's own timestamp, so a variable frame rate is right too. A window reaching past the
sound is silence, as in FaceFusion.

With a voice extractor (--voice-extractor-model, slimfuse.processors.voice_extract) the voice is first separated
from music and noise, as FaceFusion does; without one the whole sound is heard.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from slimfuse.errors import InputMissingError, LipSyncAudioError

DECODE_RATE = 48_000
MEL_RATE = 16_000
HOP = 200
WINDOW = 800
MELS = 80
COLUMNS_PER_SECOND = MEL_RATE // HOP
WINDOW_COLUMNS = 16
LOW_HZ, HIGH_HZ = 55.0, 7600.0
PREEMPHASIS = 0.97
BLOCK_COLUMNS = 4096
"""Spectrogram columns computed at once (bounds the memory of a long sound)."""
Separate = Callable[[np.ndarray], np.ndarray]
"""A voice extractor: DECODE_RATE stereo int16 samples (n x 2) -> the voice (n x 2, any scale)."""


@dataclass(frozen=True)
class Voice:
    """The mel spectrogram (MELS x columns, magnitudes) of a sound and its length in seconds."""

    spectrogram: np.ndarray
    duration: float

    def window(self, seconds: float) -> np.ndarray:
        """The MELS x WINDOW_COLUMNS window of a frame at `seconds` (zeros, silence, past the sound's end)."""
        start = max(0, math.floor(seconds * COLUMNS_PER_SECOND + 1e-6))
        end = start + WINDOW_COLUMNS
        if end >= self.spectrogram.shape[1]:
            return np.zeros((MELS, WINDOW_COLUMNS), dtype=np.float64)
        return self.spectrogram[:, start:end]


def log_mel(window: np.ndarray) -> np.ndarray:
    """A window as the lip syncers take it: log10 of the magnitudes (floored at 1e-5) x 1.6 + 3.2, within -4..4."""
    floored = np.maximum(np.exp(-5 * np.log(10)), window)
    return (np.log10(floored) * 1.6 + 3.2).clip(-4, 4).astype(np.float32)


def read_voice(path: Path, separate: Separate | None = None) -> Voice:
    """The voice of the first audio stream of `path` (an audio file or a video), separated by `separate` when
    given; LipSyncAudioError when it has none or it cannot be decoded."""
    return voice_of(decode_samples(path), separate)


def voice_of(samples: np.ndarray, separate: Separate | None = None) -> Voice:
    """The voice of DECODE_RATE stereo int16 samples (n x 2), separated by `separate` when given."""
    if samples.shape[0] == 0 or not np.any(samples):
        return Voice(np.zeros((MELS, 0)), samples.shape[0] / DECODE_RATE)
    sound = np.asarray(separate(samples) if separate is not None else samples, dtype=np.float64)
    if not np.any(sound):
        return Voice(np.zeros((MELS, 0)), samples.shape[0] / DECODE_RATE)
    resampled = fourier_resample(sound, round(samples.shape[0] * MEL_RATE / DECODE_RATE))
    mono = resampled.mean(axis=1)
    mono = mono / np.max(np.abs(mono))
    emphasised = np.concatenate([mono[:1], mono[1:] - PREEMPHASIS * mono[:-1]])
    return Voice(mel_spectrogram(emphasised), samples.shape[0] / DECODE_RATE)


def decode_samples(path: Path) -> np.ndarray:
    """The first audio stream of `path` as DECODE_RATE stereo int16 samples (n x 2), sample 0 at time 0 (a stream
    that starts later is preceded by silence)."""
    if not Path(path).is_file():
        raise InputMissingError(path)
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as exc:
        raise LipSyncAudioError(path, f"the lip syncer's audio cannot be read ({exc})") from exc
    with container:
        if not container.streams.audio:
            raise LipSyncAudioError(path, "has no audio stream for the lip syncer (give --source-audio FILE)")
        resampler = av.AudioResampler(format="s16", layout="stereo", rate=DECODE_RATE)
        parts: list[np.ndarray] = []
        first: float | None = None
        try:
            for frame in container.decode(audio=0):
                if first is None and frame.time is not None:
                    first = float(frame.time)
                parts += [out.to_ndarray().reshape(-1, 2) for out in resampler.resample(frame)]
            parts += [out.to_ndarray().reshape(-1, 2) for out in resampler.resample(None)]
        except (av.FFmpegError, ValueError) as exc:
            raise LipSyncAudioError(path, f"the lip syncer's audio cannot be decoded ({exc})") from exc
    samples = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int16)
    lead = round((first or 0.0) * DECODE_RATE)
    if lead > 0:
        return np.concatenate([np.zeros((lead, 2), dtype=np.int16), samples])
    return samples[-lead:]


def fourier_resample(signal: np.ndarray, count: int) -> np.ndarray:
    """`signal` (n x channels) resampled to `count` samples by cutting or padding its spectrum (the Nyquist bin
    of an even spectrum split or joined), as scipy.signal.resample does."""
    length = signal.shape[0]
    spectrum = np.fft.rfft(signal, axis=0)
    kept = min(count, length)
    resized = np.zeros((count // 2 + 1, signal.shape[1]), dtype=spectrum.dtype)
    resized[:kept // 2 + 1] = spectrum[:kept // 2 + 1]
    if kept % 2 == 0 and count != length:
        resized[kept // 2] *= 2.0 if count < length else 0.5
    return np.fft.irfft(resized, count, axis=0) * (count / length)


def mel_filter_bank() -> np.ndarray:
    """MELS triangular filters over the WINDOW // 2 + 1 frequency bins, from LOW_HZ to HIGH_HZ on the mel scale."""
    def to_mel(hertz: np.ndarray) -> np.ndarray:
        return 2595 * np.log10(1 + hertz / 700)

    mels = np.linspace(to_mel(np.array(LOW_HZ)), to_mel(np.array(HIGH_HZ)), MELS + 2)
    edges = np.floor((WINDOW + 1) * (700 * (10 ** (mels / 2595) - 1)) / MEL_RATE).astype(np.int64)
    bank = np.zeros((MELS, WINDOW // 2 + 1))
    for index in range(MELS):
        start, end = int(edges[index]), int(edges[index + 1])
        bank[index, start:end] = triangle(end - start)
    return bank


def triangle(width: int) -> np.ndarray:
    """A triangular window of `width` points whose ends are not zero (scipy.signal.windows.triang)."""
    if width <= 1:
        return np.ones(max(width, 0))
    half = np.arange(1, (width + 1) // 2 + 1)
    if width % 2:
        rising = 2 * half / (width + 1.0)
        return np.concatenate([rising, rising[-2::-1]])
    rising = (2 * half - 1.0) / width
    return np.concatenate([rising, rising[::-1]])


def mel_spectrogram(signal: np.ndarray) -> np.ndarray:
    """MELS x columns: the magnitudes of the signal's short-time spectrum through the mel filters."""
    padded = np.pad(signal, WINDOW // 2)
    padded = np.pad(padded, (0, (-(padded.shape[0] - WINDOW) % HOP) % WINDOW))
    frames = np.lib.stride_tricks.sliding_window_view(padded, WINDOW)[::HOP]
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(WINDOW) / WINDOW)
    bank = mel_filter_bank()
    blocks = [bank @ np.abs(np.fft.rfft(frames[start:start + BLOCK_COLUMNS] * hann, axis=1) / hann.sum()).T
              for start in range(0, frames.shape[0], BLOCK_COLUMNS)]
    return np.concatenate(blocks, axis=1)

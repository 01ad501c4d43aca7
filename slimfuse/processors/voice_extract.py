"""The voice extractor (kim_vocal_1, kim_vocal_2, uvr_mdxnet): the voice separated from music and noise before the
lip syncer hears a sound, as FaceFusion 3.8.1 does (`facefusion/voice_extractor.py`).

The sound (48 kHz stereo int16) goes through in overlapping pieces of 240 x 1024 samples every 180 x 1024 (where
pieces overlap, their voices are averaged). Each piece, scaled to [-1, 1], is padded by 3840 samples at each end
and cut into windows of 255 x 1024 samples every 255 x 1024 - 2 x 3840, each channel on its own; each window's
short-time spectrum (symmetric 7680-sample Hann windows every 1024 samples, its ends padded by half a window, 256
columns) gives the model's input [windows, 4, 3072, 256]: each channel's real and imaginary parts, the lowest 3072
frequency bins. The model's output, the voice's spectrum in the same layout, is turned back into sound (the bins
above 3072 silent; the inverse transform overlap-adds the windowed frames and divides by the windows' summed
squares), the windows' padded ends dropped and the pieces joined again.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from slimfuse.models.neural.voice_extractors import VOICE_BINS, VOICE_COLUMNS, VOICE_INPUT

PIECE = 240 * 1024
PIECE_STEP = 180 * 1024
TRIM = 3840
FRAME = 7680
HOP = 1024
WINDOW = (VOICE_COLUMNS - 1) * HOP
"""The samples of one model window (255 x 1024)."""
WINDOW_STEP = WINDOW - 2 * TRIM

Run = Callable[[dict[str, np.ndarray]], np.ndarray]
"""The model: its input by name -> its first output."""


def hann() -> np.ndarray:
    """The symmetric Hann window of FRAME samples."""
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / (FRAME - 1))


class VoiceExtractor:
    def __init__(self, run: Run) -> None:
        self.run = run

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        """The voice of 48 kHz stereo int16 samples (n x 2), as float (n x 2) on the scale of int16 / 32767."""
        voice = np.zeros(samples.shape, dtype=np.float64)
        count = np.zeros(samples.shape, dtype=np.float64)
        for start in range(0, samples.shape[0], PIECE_STEP):
            end = min(start + PIECE, samples.shape[0])
            voice[start:end] += self.piece(samples[start:end])
            count[start:end] += 1
        return (voice / count).astype(np.float32)

    def piece(self, samples: np.ndarray) -> np.ndarray:
        """The voice of one piece (m x 2 int16) as float32 (m x 2)."""
        length = samples.shape[0]
        pad = WINDOW_STEP - length % WINDOW_STEP
        scaled = samples.T.astype(np.float32) / np.float32(np.iinfo(np.int16).max)
        padded = np.pad(scaled, ((0, 0), (TRIM, TRIM + pad)))
        rows = np.concatenate([padded[:, index:index + WINDOW] for index in range(0, length + pad, WINDOW_STEP)])
        spectra = spectrum(rows)  # [2 x windows, bins, columns], channels interleaved
        parts = np.stack([spectra.real, spectra.imag], axis=1)[:, :, :VOICE_BINS]
        model_input = parts.reshape(-1, 4, VOICE_BINS, VOICE_COLUMNS).astype(np.float32)
        output = np.asarray(self.run({VOICE_INPUT: model_input}), dtype=np.float64).reshape(-1, 2, VOICE_BINS,
                                                                                            VOICE_COLUMNS)
        full = np.zeros((output.shape[0], FRAME // 2 + 1, VOICE_COLUMNS), dtype=np.complex128)
        full[:, :VOICE_BINS] = output[:, 0] + 1j * output[:, 1]
        sound = inverse_spectrum(full).reshape(-1, 2, WINDOW)[:, :, TRIM:-TRIM]
        return sound.transpose(1, 0, 2).reshape(2, -1)[:, :length].T.astype(np.float32)


def spectrum(rows: np.ndarray) -> np.ndarray:
    """[rows, FRAME // 2 + 1, columns]: each row's short-time spectrum (FRAME-sample Hann windows every HOP, the row
    padded by half a window at each end), unscaled."""
    padded = np.pad(rows, ((0, 0), (FRAME // 2, FRAME // 2)))
    frames = np.lib.stride_tricks.sliding_window_view(padded, FRAME, axis=1)[:, ::HOP]
    return np.fft.rfft(frames * hann(), axis=2).transpose(0, 2, 1)


def inverse_spectrum(spectra: np.ndarray) -> np.ndarray:
    """[rows, samples]: the rows whose spectra `spectrum` gave (the windowed frames overlap-added and divided by
    the windows' summed squares, the half-window pads dropped)."""
    window = hann()
    frames = np.fft.irfft(spectra, n=FRAME, axis=1) * window[None, :, None]
    columns = spectra.shape[2]
    length = FRAME + (columns - 1) * HOP
    sound = np.zeros((spectra.shape[0], length))
    norm = np.zeros(length)
    for column in range(columns):
        sound[:, column * HOP:column * HOP + FRAME] += frames[:, :, column]
        norm[column * HOP:column * HOP + FRAME] += window ** 2
    inner = slice(FRAME // 2, length - FRAME // 2)
    return sound[:, inner] / np.where(norm[inner] > 1e-10, norm[inner], 1.0)

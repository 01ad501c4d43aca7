"""The One-Euro filter (Casiez et al., CHI 2012): steady when still, little lag when moving.

Its cut-off frequency rises with the signal's speed, so a still face does not jitter and a moving one is not
dragged behind. Values are filtered in units of the face's size, so the same settings suit small and large faces.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OneEuroSettings:
    min_cutoff: float = 0.5
    """Hz: the cut-off when still; lower is steadier."""
    beta: float = 40.0
    """How fast the cut-off rises with speed (per face size per second); higher lags less."""
    derivative_cutoff: float = 1.0


def _alpha(cutoff: np.ndarray | float, elapsed: float) -> np.ndarray | float:
    tau = 1.0 / (2 * math.pi * np.asarray(cutoff))
    return 1.0 / (1.0 + tau / elapsed)


class OneEuroFilter:
    """Filters one array-valued signal (e.g. 468x3 landmarks) sampled at irregular times."""

    def __init__(self, settings: OneEuroSettings = OneEuroSettings()) -> None:
        self.settings = settings
        self._value: np.ndarray | None = None
        self._speed: np.ndarray | None = None
        self._time = 0.0

    def __call__(self, value: np.ndarray, time: float, scale: float = 1.0) -> np.ndarray:
        """The filtered value at `time` (seconds); `scale` converts the value's units to face sizes."""
        if self._value is None or self._speed is None or time <= self._time:
            self._value, self._speed, self._time = value.astype(np.float64), np.zeros(value.shape), time
            return value
        elapsed = time - self._time
        speed = (value - self._value) / elapsed / max(scale, 1e-6)
        self._speed = self._speed + _alpha(self.settings.derivative_cutoff, elapsed) * (speed - self._speed)
        cutoff = self.settings.min_cutoff + self.settings.beta * np.abs(self._speed)
        self._value = self._value + _alpha(cutoff, elapsed) * (value - self._value)
        self._time = time
        return self._value.astype(value.dtype)

    def reset(self) -> None:
        self._value = None

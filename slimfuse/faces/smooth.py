"""The One-Euro filter (Casiez et al., CHI 2012): steady when still, little lag when moving.

Its cut-off frequency rises with the signal's speed, so a still face does not jitter and a moving one is not
dragged behind. Values are filtered in units of the face's size, so the same settings suit small and large faces.
On top of it a hold: while the filtered points stay within a fraction of a pixel of the points last given out, those
are given out again, exactly, so a still face's swap does not change from frame to frame.
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
    hold: float = 0.0025
    """Face sizes: while the filtered points stay within this (root mean square per coordinate, and four times this
    at the most-moved one) of those last given out, the same points are given out again, so a still face's mesh,
    mask and warp do not creep by hundredths of a pixel from frame to frame (which moves sharp edges and grain by
    whole levels); once they move further they are followed until they settle. 0 turns it off."""


def _alpha(cutoff: np.ndarray | float, elapsed: float) -> np.ndarray | float:
    tau = 1.0 / (2 * math.pi * np.asarray(cutoff))
    return 1.0 / (1.0 + tau / elapsed)


class OneEuroFilter:
    """Filters one array-valued signal (e.g. 468x3 landmarks) sampled at irregular times."""

    def __init__(self, settings: OneEuroSettings = OneEuroSettings()) -> None:
        self.settings = settings
        self._value: np.ndarray | None = None
        self._speed: np.ndarray | None = None
        self._held: np.ndarray | None = None
        self._moving = False
        self._time = 0.0

    def __call__(self, value: np.ndarray, time: float, scale: float = 1.0) -> np.ndarray:
        """The filtered value at `time` (seconds); `scale` converts the value's units to face sizes."""
        if self._value is None or self._speed is None or self._held is None or time <= self._time:
            self._value, self._speed, self._time = value.astype(np.float64), np.zeros(value.shape), time
            self._held, self._moving = value.copy(), False
            return value
        elapsed = time - self._time
        speed = (value - self._value) / elapsed / max(scale, 1e-6)
        self._speed = self._speed + _alpha(self.settings.derivative_cutoff, elapsed) * (speed - self._speed)
        cutoff = self.settings.min_cutoff + self.settings.beta * np.abs(self._speed)
        step = _alpha(cutoff, elapsed) * (value - self._value)
        self._value = self._value + step
        self._time = time
        if self._follows(float(np.abs(step).max()) / max(scale, 1e-6), np.abs(self._value - self._held) / max(scale, 1e-6)):
            self._held = self._value.astype(value.dtype)
        return self._held.copy()

    def _follows(self, step: float, offset: np.ndarray) -> bool:
        """Hysteresis between holding and following: the whole mesh drifting (root mean square per coordinate) or a
        part of it moving (a mouth opening: four times as far at its most-moved point) starts following; following
        ends once the filter has settled (no coordinate moving by half the hold in a frame), so a hold never freezes
        a half-followed movement."""
        hold = self.settings.hold
        if self._moving:
            self._moving = step >= 0.5 * hold
            return True
        self._moving = float(np.sqrt(np.mean(np.square(offset)))) >= hold or float(offset.max()) >= 4 * hold
        return self._moving

    def reset(self) -> None:
        self._value = None

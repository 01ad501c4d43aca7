"""A constant output frame rate (`--output-video-fps`) from frames that keep their own timestamps."""
from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

import numpy as np


class RateConverter:
    """Turns frames with their own timestamps into a constant rate: output slot k shows the input frame on screen
    at time origin + k/fps, so frames are repeated where the input is slower and dropped where it is faster."""

    def __init__(self, fps: Fraction) -> None:
        self.fps = fps
        self._origin: Fraction | None = None
        self._slot = 0
        self._pending: tuple[np.ndarray, Fraction] | None = None

    def push(self, rgb: np.ndarray, when: Fraction) -> Iterator[tuple[np.ndarray, int]]:
        """Feed a frame shown from `when` seconds; yields (pixels, slot) for the slots the previous frame covers."""
        if self._origin is None:
            self._origin = when
        if self._pending is not None:
            yield from self._emit_until(when)
        self._pending = (rgb, when)

    def finish(self, end: Fraction) -> Iterator[tuple[np.ndarray, int]]:
        if self._pending is not None:
            yield from self._emit_until(end)
            self._pending = None

    def _emit_until(self, until: Fraction) -> Iterator[tuple[np.ndarray, int]]:
        assert self._pending is not None and self._origin is not None
        while self._origin + self._slot / self.fps < until:
            yield self._pending[0], self._slot
            self._slot += 1

    @property
    def origin_pts(self) -> int:
        """The first slot's pts in 1/fps ticks, so a stream that starts late still does."""
        return 0 if self._origin is None else round(self._origin * self.fps)


"""The latency ladder: when frames take longer than the budget, the live loop steps down its processing size (the
target face size first, then the detection interval), and steps back up when there is headroom again.

Each decision waits for a full window of frames measured at the current step, so one slow frame does not move it
and the ladder does not flap between two steps.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

# Face sizes the ladder goes down through (px); it never goes below the last one.
FACE_SIZES = (512, 384, 256, 192)
# How much longer the detection interval gets at each step once the face size is at its smallest.
INTERVAL_FACTORS = (2, 4)
# Headroom needed to step back up: the window's p95 under this share of the budget.
HEADROOM = 0.6


@dataclass(frozen=True)
class Step:
    face_size: int
    detect_interval: int

    def describe(self) -> str:
        return f"face {self.face_size} px, detect every {self.detect_interval}"


def steps_for(face_size: int, detect_interval: int) -> tuple[Step, ...]:
    """The ladder from the configured face size and detection interval (the top step) downwards."""
    sizes = [face_size, *(size for size in FACE_SIZES if size < face_size)]
    steps = [Step(size, detect_interval) for size in sizes]
    steps += [Step(sizes[-1], detect_interval * factor) for factor in INTERVAL_FACTORS]
    return tuple(steps)


@dataclass(frozen=True)
class Change:
    frame: int
    """The processed frame after which the step changed."""
    step: int
    reason: str


class LatencyLadder:
    def __init__(self, steps: tuple[Step, ...], budget_ms: float, window: int = 10, enabled: bool = True) -> None:
        self.steps = steps
        self.budget_ms = budget_ms
        self.window = window
        self.enabled = enabled
        self.index = 0
        self.changes: list[Change] = []
        self._times: deque[float] = deque(maxlen=3 * window)
        self._frames = 0

    @property
    def step(self) -> Step:
        return self.steps[self.index]

    def observe(self, frame_ms: float) -> Step | None:
        """Record one frame's processing time; the new step when the ladder moves, else None."""
        self._frames += 1
        if not self.enabled:
            return None
        self._times.append(frame_ms)
        recent = list(self._times)[-self.window:]
        if len(recent) >= self.window and float(np.median(recent)) > self.budget_ms and self.index + 1 < len(self.steps):
            return self._move(+1, f"median {np.median(recent):.1f} ms over the {self.budget_ms:.1f} ms budget")
        if (len(self._times) == self._times.maxlen and self.index > 0
                and float(np.percentile(self._times, 95)) < HEADROOM * self.budget_ms):
            return self._move(-1, f"p95 {np.percentile(self._times, 95):.1f} ms under {HEADROOM:.0%} of the budget")
        return None

    def _move(self, by: int, reason: str) -> Step:
        self.index += by
        self._times.clear()
        self.changes.append(Change(self._frames, self.index, reason))
        return self.step

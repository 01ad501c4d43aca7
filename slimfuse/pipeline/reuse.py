"""Reuse of generated faces across video frames.

When a face's crop has barely changed since the processor last ran on it, the last result is pasted again
(through the new frame's crop transform, so it follows the face) instead of running the model again, at most
`max_frames` times in a row. Crops are compared small and grey: what a generator would change is the face,
not sensor noise.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import cv2
import numpy as np

from slimfuse.processors.base import FaceCrop, Processed

PROBE_SIZE = 64


@dataclass(frozen=True)
class ReuseOptions:
    threshold: float = 0.0
    """Largest mean absolute difference (grey levels, 0-255, on a 64-px thumbnail) still reused; 0 = off."""
    max_frames: int = 3


@dataclass
class _Entry:
    probe: np.ndarray
    result: Processed
    reused: int = 0


def probe(crop: FaceCrop) -> np.ndarray:
    grey = cv2.cvtColor(crop.image, cv2.COLOR_RGB2GRAY)
    return cv2.resize(grey, (PROBE_SIZE, PROBE_SIZE), interpolation=cv2.INTER_AREA).astype(np.float32)


class ReuseCache:
    """Last result per (track, processor); owned by one video run. The analysis thread forgets ended tracks
    while render threads look up and store, hence the lock."""

    def __init__(self, options: ReuseOptions) -> None:
        self.options = options
        self._entries: dict[tuple[int, int], _Entry] = {}
        self._lock = threading.Lock()
        self.reused = 0
        self.generated = 0

    @property
    def enabled(self) -> bool:
        return self.options.threshold > 0 and self.options.max_frames > 0

    def lookup(self, key: tuple[int, int], crop: FaceCrop) -> Processed | None:
        """The cached result, resized to this crop, when the crop is close enough to the one it came from."""
        with self._lock:
            entry = self._entries.get(key)
        if not self.enabled or entry is None or entry.reused >= self.options.max_frames:
            return None
        if float(np.abs(probe(crop) - entry.probe).mean()) > self.options.threshold:
            return None
        with self._lock:
            entry.reused += 1
            self.reused += 1
        return _fit(entry.result, crop.image.shape[:2])

    def store(self, key: tuple[int, int], crop: FaceCrop, result: Processed) -> None:
        entry = _Entry(probe=probe(crop), result=result) if self.enabled else None
        with self._lock:
            self.generated += 1
            if entry is not None:
                self._entries[key] = entry

    def forget(self, live_tracks: set[int]) -> None:
        """Drop the entries of tracks that ended, so memory stays flat over a long video."""
        with self._lock:
            for key in [key for key in self._entries if key[0] not in live_tracks]:
                del self._entries[key]


def _fit(result: Processed, shape: tuple[int, int]) -> Processed:
    """Crops cover the face in the same way each frame, so a size change is a uniform scale."""
    if result.image.shape[:2] == shape:
        return result
    size = (shape[1], shape[0])
    return Processed(image=cv2.resize(result.image, size, interpolation=cv2.INTER_LINEAR),
                     alpha=cv2.resize(result.alpha, size, interpolation=cv2.INTER_LINEAR))

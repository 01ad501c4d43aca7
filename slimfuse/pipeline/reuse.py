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


class Slot:
    """Where one generated result is (or will be) kept: the frames that reuse it share the slot, so a chunk of
    frames can decide what to reuse before the generator has run over the chunk."""

    def __init__(self) -> None:
        self.result: Processed | None = None

    def fitted(self, shape: tuple[int, int]) -> Processed:
        """The result at a crop of `shape` (crops cover the face in the same way each frame, so a size change
        is a uniform scale)."""
        if self.result is None:
            raise RuntimeError("the slot's result was not generated")
        return _fit(self.result, shape)


@dataclass(frozen=True)
class Claim:
    slot: Slot
    fresh: bool
    """The caller must generate the result and put it in the slot; otherwise it is reused."""


@dataclass
class _Entry:
    probe: np.ndarray
    slot: Slot
    reused: int = 0


def probe(crop: FaceCrop) -> np.ndarray:
    """[n, PROBE_SIZE, PROBE_SIZE]: the crop in small grey, and the face as it came into the chain where the crop
    carries it (a processor that reads it, such as the expression restorer, must see that change too)."""
    images = (crop.image,) if crop.original is None else (crop.image, crop.original)
    return np.stack([cv2.resize(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), (PROBE_SIZE, PROBE_SIZE),
                                interpolation=cv2.INTER_AREA).astype(np.float32) for image in images])


class ReuseCache:
    """Last result per (track, processor); owned by one video run. The analysis thread forgets ended tracks
    while render threads claim slots, hence the lock. Claims for one key must come in frame order."""

    def __init__(self, options: ReuseOptions) -> None:
        self.options = options
        self._entries: dict[tuple[int, int], _Entry] = {}
        self._lock = threading.Lock()
        self.reused = 0
        self.generated = 0

    @property
    def enabled(self) -> bool:
        return self.options.threshold > 0 and self.options.max_frames > 0

    def claim(self, key: tuple[int, int], crop: FaceCrop, reusable: bool = True) -> Claim:
        """The slot of the last result for `key` when the crop is close enough to the one it came from (and it
        was reused fewer than max_frames times in a row); else a fresh slot that later claims may reuse. A result
        that is not `reusable` (it depends on more than the crop: the frame's time) always gets a fresh slot."""
        current = probe(crop) if self.enabled and reusable else None
        with self._lock:
            entry = self._entries.get(key)
            if (current is not None and entry is not None and entry.reused < self.options.max_frames
                    and float(np.abs(current - entry.probe).mean(axis=(1, 2)).max()) <= self.options.threshold):
                entry.reused += 1
                self.reused += 1
                return Claim(entry.slot, fresh=False)
            slot = Slot()
            self.generated += 1
            if current is not None:
                self._entries[key] = _Entry(probe=current, slot=slot)
            return Claim(slot, fresh=True)

    def clear(self) -> None:
        """Drop every kept result: what made them changed (another source face, other swap options), so none may
        be pasted again."""
        with self._lock:
            self._entries.clear()

    def forget(self, live_tracks: set[int]) -> None:
        """Drop the entries of tracks that ended, so memory stays flat over a long video."""
        with self._lock:
            for key in [key for key in self._entries if key[0] not in live_tracks]:
                del self._entries[key]


def _fit(result: Processed, shape: tuple[int, int]) -> Processed:
    if result.image.shape[:2] == shape:
        return result
    size = (shape[1], shape[0])
    return Processed(image=cv2.resize(result.image, size, interpolation=cv2.INTER_LINEAR),
                     alpha=cv2.resize(result.alpha, size, interpolation=cv2.INTER_LINEAR))

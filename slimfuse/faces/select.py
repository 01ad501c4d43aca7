"""Which target faces to swap: the largest one, all of them, or those that look like a reference face.

One selector serves images, videos and live streams: it sees each frame's tracked faces (largest first) and keeps
what must hold from frame to frame (the face chosen in `one` mode, the reference identity)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from slimfuse.config import SelectorMode
from slimfuse.faces.identity import distance
from slimfuse.faces.track import Track

# In `one` mode another face must be this much larger before the swap moves to it, so it does not flicker
# between two faces of about the same size.
SWITCH_MARGIN = 1.2

Describe = Callable[[Track], np.ndarray]
"""A track's identity descriptor (computed once per track by the tracker)."""


class FaceSelector:
    def __init__(self, mode: SelectorMode, reference: np.ndarray | None = None, position: int = 0,
                 max_distance: float = 0.6, metric: Callable[[np.ndarray, np.ndarray], float] = distance) -> None:
        """reference: the descriptor of the person to swap (from a reference photo); None in reference mode: the
        face at `position` (0 = largest) of the first frame with faces. metric: the recognizer's distance."""
        self.mode = mode
        self.position = position
        self.max_distance = max_distance
        self.metric = metric
        self._reference = reference
        self._chosen: int | None = None

    def select(self, tracks: list[Track], describe: Describe) -> list[Track]:
        """The tracks to swap in this frame; `tracks` come largest first."""
        if not tracks:
            return []
        if self.mode == "many":
            return list(tracks)
        if self.mode == "one":
            return [self._hold_choice(tracks)]
        if self._reference is None:
            self._reference = describe(tracks[min(self.position, len(tracks) - 1)])
        reference = self._reference
        return [track for track in tracks if self.metric(describe(track), reference) <= self.max_distance]

    def _hold_choice(self, tracks: list[Track]) -> Track:
        largest = tracks[0]
        current = next((track for track in tracks if track.id == self._chosen), None)
        if current is None or largest.face.size > SWITCH_MARGIN * current.face.size:
            current = largest
        self._chosen = current.id
        return current

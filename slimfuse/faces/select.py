"""Which target faces to swap: the first one, all of them, or those that look like a reference face; in an order
(largest first by default) and, with FaceFusion's fairface classifier, only faces of a gender, race or age.

One selector serves images, videos and live streams: it sees each frame's tracked faces (largest first) and keeps
what must hold from frame to frame (the face chosen in `one` mode, the reference identity). As in FaceFusion, the
order and the class filters pick the face in `one` mode, the faces in `many` mode and the reference face in
`reference` mode (whose matches are then every face that looks like it)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from slimfuse.config import FaceOptions, SelectorMode, SelectorOrder
from slimfuse.faces.classify import FaceClasses
from slimfuse.faces.identity import distance
from slimfuse.faces.track import Track
from slimfuse.faces.types import Face

# In `one` mode another face must be this much larger before the swap moves to it, so it does not flicker
# between two faces of about the same size.
SWITCH_MARGIN = 1.2
LARGEST_FIRST: SelectorOrder = "large-small"
"""The order faces come in from the analysis and the tracker (by the box's longer side)."""

Describe = Callable[[Track], np.ndarray]
"""A track's identity descriptor (computed once per track by the tracker)."""
Classify = Callable[[Track], FaceClasses]
"""What the classifier tells of a track's face (computed once per track by the tracker)."""
Item = TypeVar("Item")


@dataclass(frozen=True)
class ClassFilter:
    """The faces --face-selector-gender, --face-selector-race and --face-selector-age-start/-end keep."""

    gender: str | None = None
    race: str | None = None
    ages: range = range(0, 100)
    """The ages asked for, [start, end): a face is kept when its age group reaches into them."""

    @classmethod
    def of(cls, options: FaceOptions, source: FaceClasses | None) -> ClassFilter | None:
        """The filter the options ask for (None: no filter); `auto` takes the source face's gender or race."""
        if not options.classified:
            return None
        gender, race = options.face_selector_gender, options.face_selector_race
        if "auto" in (gender, race) and source is None:
            raise ValueError("auto needs the source face's classes")
        start, end = options.face_selector_age_start, options.face_selector_age_end
        return cls(gender=source.gender if gender == "auto" and source else gender,
                   race=source.race if race == "auto" and source else race,
                   ages=range(0 if start is None else start, 100 if end is None else end))

    def keeps(self, classes: FaceClasses) -> bool:
        return ((self.gender is None or classes.gender == self.gender)
                and (self.race is None or classes.race == self.race)
                and bool(set(classes.age) & set(self.ages)))


def in_order(items: Sequence[Item], order: SelectorOrder, face_of: Callable[[Item], Face]) -> list[Item]:
    """`items` (largest face first) in `order`: by the box's left or top edge, its size, or the detector's score."""
    if order == LARGEST_FIRST:
        return list(items)
    if order == "small-large":
        return list(reversed(items))
    keys: dict[str, Callable[[Face], float]] = {
        "left-right": lambda face: float(face.box[0]), "right-left": lambda face: -float(face.box[0]),
        "top-bottom": lambda face: float(face.box[1]), "bottom-top": lambda face: -float(face.box[1]),
        "best-worst": lambda face: -face.score, "worst-best": lambda face: face.score,
    }
    key = keys[order]
    return sorted(items, key=lambda item: key(face_of(item)))


class FaceSelector:
    def __init__(self, mode: SelectorMode, reference: np.ndarray | None = None, position: int = 0,
                 max_distance: float = 0.6, metric: Callable[[np.ndarray, np.ndarray], float] = distance,
                 order: SelectorOrder = LARGEST_FIRST, classes: ClassFilter | None = None) -> None:
        """reference: the descriptor of the person to swap (from a reference photo); None in reference mode: the
        face at `position` (in `order`, among the faces `classes` keeps) of the first frame with faces. metric: the
        recognizer's distance."""
        self.mode = mode
        self.position = position
        self.max_distance = max_distance
        self.metric = metric
        self.order = order
        self.classes = classes
        self._reference = reference
        self._chosen: int | None = None

    def select(self, tracks: list[Track], describe: Describe, classify: Classify | None = None) -> list[Track]:
        """The tracks to swap in this frame; `tracks` come largest first. classify: needed when the selector
        filters by classes."""
        if self.mode == "reference" and self._reference is not None:
            reference = self._reference
            return [track for track in tracks if self.metric(describe(track), reference) <= self.max_distance]
        chosen = self.arranged(tracks, classify)
        if not chosen:
            return []
        if self.mode == "many":
            return chosen
        if self.mode == "one":
            return [self._hold_choice(chosen) if self.order == LARGEST_FIRST else chosen[0]]
        self._reference = describe(chosen[min(self.position, len(chosen) - 1)])
        return self.select(tracks, describe, classify)

    def arranged(self, tracks: list[Track], classify: Classify | None) -> list[Track]:
        """The tracks in the selector's order, those the class filter drops left out."""
        ordered = in_order(tracks, self.order, lambda track: track.face)
        if self.classes is None:
            return ordered
        if classify is None:
            raise ValueError("the selector filters by classes: give it the classifier")
        keep = self.classes
        return [track for track in ordered if keep.keeps(classify(track))]

    def _hold_choice(self, tracks: list[Track]) -> Track:
        largest = tracks[0]
        current = next((track for track in tracks if track.id == self._chosen), None)
        if current is None or largest.face.size > SWITCH_MARGIN * current.face.size:
            current = largest
        self._chosen = current.id
        return current

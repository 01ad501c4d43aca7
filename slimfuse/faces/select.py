"""Which target faces to swap: the largest one, all of them, or those that look like a reference face."""
from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from slimfuse.faces.identity import distance
from slimfuse.faces.types import Face

SelectorMode = Literal["one", "many", "reference"]


def select_faces(
    faces: list[Face],
    mode: SelectorMode,
    reference: np.ndarray | None = None,
    describe: Callable[[Face], np.ndarray] | None = None,
    max_distance: float = 0.6,
    metric: Callable[[np.ndarray, np.ndarray], float] = distance,
) -> list[Face]:
    """`faces` come largest first; `reference` is a descriptor and `describe` computes one for a face;
    `metric` is the recogniser's distance (dlib's Euclidean by default)."""
    if not faces:
        return []
    if mode == "one":
        return [faces[0]]
    if mode == "many":
        return list(faces)
    if reference is None or describe is None:
        raise ValueError("reference mode needs a reference descriptor and a way to describe faces")
    return [face for face in faces if metric(describe(face), reference) <= max_distance]

"""Who a face in a test's output is: the known person it is clearly nearest to.

A swapped face keeps the target's outline, hair and some of its skin texture, so dlib puts a swap of a 150-px face
at about 0.42 from the source and 0.58-0.62 from the target: the swap's identity goal is "within the same-person line
of the source, and nearer the source than the target", judged here with a margin, rather than by the target being
past the same-person line too."""
from __future__ import annotations

import numpy as np

from slimfuse.faces.identity import SAME_PERSON_DISTANCE, distance

MARGIN = 0.1


def who(found: np.ndarray, known: dict[str, np.ndarray]) -> str:
    """The name of the known descriptor within SAME_PERSON_DISTANCE of `found` and at least MARGIN nearer than every
    other; otherwise 'unclear' with the distances."""
    ranked = sorted((distance(found, descriptor), name) for name, descriptor in known.items())
    best, name = ranked[0]
    if best < SAME_PERSON_DISTANCE and all(best + MARGIN <= other for other, _ in ranked[1:]):
        return name
    return "unclear " + ", ".join(f"{n} {d:.3f}" for d, n in ranked)

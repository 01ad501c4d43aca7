"""Reuse for a stage that reads each face as it came into the chain (the expression restorer): a result is reused
only when both the crop it is given and that original are close to the ones it came from, so a new expression under
an unchanged swapped face is restored anew."""
from __future__ import annotations

import numpy as np

from slimfuse.pipeline.reuse import ReuseCache, ReuseOptions
from slimfuse.processors.base import FaceCrop


def _crop(image: np.ndarray, original: np.ndarray | None = None) -> FaceCrop:
    return FaceCrop(image=image, landmarks=np.zeros((468, 3), np.float32), crop_from_frame=np.eye(2, 3),
                    original=original)


def test_a_changed_original_is_not_reused() -> None:
    rng = np.random.default_rng(0)
    face = rng.integers(0, 255, (128, 128, 3), dtype=np.uint8)
    smiling, frowning = (rng.integers(0, 255, (128, 128, 3), dtype=np.uint8) for _ in range(2))
    cache = ReuseCache(ReuseOptions(threshold=2.0))
    assert cache.claim((1, 0), _crop(face, smiling)).fresh
    assert not cache.claim((1, 0), _crop(face, smiling)).fresh  # both the same: reused
    assert cache.claim((1, 0), _crop(face, frowning)).fresh  # the same face, another expression under it
    assert cache.claim((2, 0), _crop(face)).fresh and not cache.claim((2, 0), _crop(face)).fresh  # no original

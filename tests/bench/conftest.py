"""The real-photo judge (dlib with the models of face-recognition-models, the `bench` extra) and the development
photos (npm pack): each skips with its one-line reason where it cannot be had."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from slimfuse.bench import photo_set
from slimfuse.bench.face_judge import FaceJudge, JudgeUnavailable


@pytest.fixture(scope="session")
def judge() -> FaceJudge:
    try:
        return FaceJudge()
    except JudgeUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def development_photos() -> dict[str, np.ndarray]:
    """sample1-3 of @vladmandic/face-api 1.7.15, fetched into $SLIMFUSE_HOME/photos the first time."""
    try:
        paths = photo_set.fetch(photo_set.DEVELOPMENT)
    except photo_set.PhotosUnavailable as exc:
        pytest.skip(str(exc))
    return {Path(p).stem: np.asarray(Image.open(p).convert("RGB")) for p in paths}

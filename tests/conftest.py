"""Shared fixtures: the real photos that ship inside installed packages."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image


def _packaged_photo(module: str, *parts: str) -> Path:
    mod = __import__(module)
    return Path(mod.__file__).parent.joinpath(*parts)


@pytest.fixture(scope="session")
def grace_hopper_path() -> Path:
    return _packaged_photo("matplotlib", "mpl-data", "sample_data", "grace_hopper.jpg")


@pytest.fixture(scope="session")
def astronaut_path() -> Path:
    return _packaged_photo("skimage", "data", "astronaut.png")


@pytest.fixture(scope="session")
def grace_hopper(grace_hopper_path: Path) -> np.ndarray:
    """512x600 RGB uint8, one face."""
    return np.asarray(Image.open(grace_hopper_path).convert("RGB"))


@pytest.fixture(scope="session")
def astronaut(astronaut_path: Path) -> np.ndarray:
    """512x512 RGB uint8, one face."""
    return np.asarray(Image.open(astronaut_path).convert("RGB"))

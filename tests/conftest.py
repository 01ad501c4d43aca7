"""Shared fixtures: the real photos that ship inside installed packages, the real model store, and an isolated
store for models placed with --models-dir."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import neural_models as nm

from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.samples import sample_path


@pytest.fixture(scope="session")
def grace_hopper_path() -> Path:
    return sample_path("grace_hopper")


@pytest.fixture(scope="session")
def astronaut_path() -> Path:
    return sample_path("astronaut")


@pytest.fixture(scope="session")
def grace_hopper(grace_hopper_path: Path) -> np.ndarray:
    """512x600 RGB uint8, one face."""
    return np.asarray(Image.open(grace_hopper_path).convert("RGB"))


@pytest.fixture(scope="session")
def astronaut(astronaut_path: Path) -> np.ndarray:
    """512x512 RGB uint8, one face."""
    return np.asarray(Image.open(astronaut_path).convert("RGB"))


@pytest.fixture(scope="session")
def store() -> Store:
    """The user's real model store (SLIMFUSE_HOME); `make test` fetches every model first."""
    return Store(notify=lambda message: None)


@pytest.fixture(scope="session")
def pool(store: Store) -> ModelPool:
    return ModelPool(store)


@pytest.fixture
def models_dir(tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder for --models-dir (created by the first model saved there), with SLIMFUSE_HOME set to an isolated
    store that links in the embedded models, so trust-on-first-use records stay out of the user's store."""
    home = tmp_path / "home"
    nm.isolated_store(home, store)
    monkeypatch.setenv("SLIMFUSE_HOME", str(home))
    return tmp_path / "placed"

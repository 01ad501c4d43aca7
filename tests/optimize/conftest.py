"""Fixtures of the optimisation tests: the calibration faces (found once), and isolated stores for variants."""
from __future__ import annotations

from pathlib import Path

import pytest

import neural_models as nm
from slimfuse.models.store import Store
from slimfuse.optimize.build import Workshop


@pytest.fixture(scope="session")
def workshop(store: Store) -> Workshop:
    """Calibration and gate faces from the real embedded models, computed once for every test that needs them."""
    return Workshop(store)


@pytest.fixture
def home(tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> Store:
    """A store of its own (the embedded models linked in) that SLIMFUSE_HOME points at, so variants made by a test
    never reach the user's store."""
    isolated = nm.isolated_store(tmp_path / "home", store)
    monkeypatch.setenv("SLIMFUSE_HOME", str(tmp_path / "home"))
    return isolated

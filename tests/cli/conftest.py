"""Fixtures of the command-line tests."""
from __future__ import annotations

from pathlib import Path

import pytest

import neural_models as nm
from slimfuse.models.store import Store


@pytest.fixture
def models_dir(tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder for --models-dir (created by the first model saved there), with SLIMFUSE_HOME set to an isolated
    store that links in the embedded models, so trust-on-first-use records stay out of the user's store."""
    home = tmp_path / "home"
    nm.isolated_store(home, store)
    monkeypatch.setenv("SLIMFUSE_HOME", str(home))
    return tmp_path / "placed"

"""The parity tests' figures: every comparison adds a row (area, model, stage, figure); with
SLIMFUSE_PARITY_TABLE=PATH the session writes them as the README's Markdown table."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from parity.reference import Figures


@pytest.fixture(scope="session")
def figures() -> Iterator[Figures]:
    path = os.environ.get("SLIMFUSE_PARITY_TABLE")
    target = Path(path).resolve() if path else None  # before any test changes the working directory
    table = Figures()
    yield table
    if target is not None:
        target.write_text(table.markdown())

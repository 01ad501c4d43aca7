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
    table = Figures()
    yield table
    path = os.environ.get("SLIMFUSE_PARITY_TABLE")
    if path:
        Path(path).write_text(table.markdown())

"""Fixtures of the live tests."""
from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from live.said import Said


@pytest.fixture
def said() -> Iterator[Said]:
    """Every line the live loop says while the test runs."""
    logger, handler = logging.getLogger("slimfuse.live.controls"), Said()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)

"""What the live loop says, caught for the live tests (`said` fixture, tests/live/conftest.py)."""
from __future__ import annotations

import logging


class Said(logging.Handler):
    """What the live loop said: (level, line)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelno, record.getMessage()))

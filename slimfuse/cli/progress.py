"""Progress of a long job: a bar on a terminal, JSON lines for scripts, or nothing with --quiet."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Literal, TextIO

LogFormat = Literal["text", "json"]
# How often a JSON progress line is written, and how often the bar is redrawn.
JSON_INTERVAL = 1.0
BAR_INTERVAL = 0.2


@dataclass
class Progress:
    total: int | None
    quiet: bool = False
    log_format: LogFormat = "text"
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    _start: float = field(default_factory=time.monotonic)
    _last: float = 0.0
    done: int = 0

    def advance(self, frames: int = 1) -> None:
        self.done += frames
        now = time.monotonic()
        interval = JSON_INTERVAL if self.log_format == "json" else BAR_INTERVAL
        if now - self._last >= interval:
            self._last = now
            self._emit(final=False)

    def finish(self, **summary: object) -> None:
        self._emit(final=True, **summary)

    @property
    def rate(self) -> float:
        return self.done / max(time.monotonic() - self._start, 1e-9)

    def _emit(self, final: bool, **summary: object) -> None:
        if self.log_format == "json":
            event = {"event": "done" if final else "progress", "frames": self.done, "total": self.total,
                     "fps": round(self.rate, 2), **summary}
            print(json.dumps(event), file=self.stream, flush=True)
            return
        if self.quiet or not self.stream.isatty():
            return
        self.stream.write("\r" + self._bar() + ("\n" if final else ""))
        self.stream.flush()

    def _bar(self) -> str:
        rate = self.rate
        if not self.total:
            return f"{self.done} frames  {rate:.1f} frames/s"
        share = min(self.done / self.total, 1.0)
        width = 30
        filled = int(share * width)
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        return (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"{rate:.1f} frames/s  ETA {int(eta) // 60}:{int(eta) % 60:02d}")

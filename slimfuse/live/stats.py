"""What a live session measures: frames in, processed, written and dropped, frames per second, latency from a
frame's arrival to its output (p50 / p95 over the last few seconds for the status line, a fixed histogram for
the whole session, so memory stays flat however long it runs)."""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

HISTOGRAM_MS = 10_000
"""Latencies are counted in 1-ms bins up to this (a neural swapper on a CPU takes seconds a frame); longer ones
land in the last bin."""
RECENT = 300
"""Frames the status line's figures cover (10 s at 30 fps)."""


@dataclass(frozen=True)
class Snapshot:
    fps: float
    p50_ms: float
    p95_ms: float
    processed: int
    written: int
    dropped_input: int
    dropped_output: int
    reconnects: int = 0
    """Times the input was lost and came back (--reconnect)."""


class LiveStats:
    """Shared by the loop (processed frames) and the output stage (written frames), hence the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.histogram = np.zeros(HISTOGRAM_MS + 1, np.int64)
        self._latencies: deque[float] = deque(maxlen=RECENT)
        self._processed_at: deque[float] = deque(maxlen=RECENT)
        self.processed = 0
        self.written = 0
        self.processing_ms = np.zeros(HISTOGRAM_MS + 1, np.int64)
        self.started = time.perf_counter()

    def on_processed(self, took_ms: float) -> None:
        with self._lock:
            self.processed += 1
            self._processed_at.append(time.perf_counter())
            self.processing_ms[min(HISTOGRAM_MS, int(took_ms))] += 1

    def on_written(self, latency_ms: float) -> None:
        with self._lock:
            self.written += 1
            self._latencies.append(latency_ms)
            self.histogram[min(HISTOGRAM_MS, int(latency_ms))] += 1

    def snapshot(self, dropped_input: int, dropped_output: int, reconnects: int = 0) -> Snapshot:
        with self._lock:
            times, recent = list(self._processed_at), list(self._latencies)
            processed, written = self.processed, self.written
        fps = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and times[-1] > times[0] else 0.0
        p50, p95 = (np.percentile(recent, (50, 95)) if recent else (0.0, 0.0))
        return Snapshot(fps, float(p50), float(p95), processed, written, dropped_input, dropped_output, reconnects)

    def whole(self) -> dict[str, float | None]:
        """p50 / p95 / max latency and processing time over the whole session, from the histograms (1-ms bins)."""
        with self._lock:
            return {**_percentiles(self.histogram, "latency"), **_percentiles(self.processing_ms, "processing")}


def _percentiles(histogram: np.ndarray, name: str) -> dict[str, float | None]:
    total = int(histogram.sum())
    if total == 0:
        return {f"{name}_p50_ms": None, f"{name}_p95_ms": None, f"{name}_max_ms": None}
    cumulative = np.cumsum(histogram)
    at = {share: int(np.searchsorted(cumulative, share * total)) + 0.5 for share in (0.5, 0.95)}
    return {f"{name}_p50_ms": at[0.5], f"{name}_p95_ms": at[0.95],
            f"{name}_max_ms": float(np.flatnonzero(histogram)[-1] + 1)}


def status_line(snapshot: Snapshot, step: str) -> str:
    reconnects = snapshot.reconnects
    resumed = f", {reconnects} reconnect{'s' if reconnects != 1 else ''}" if reconnects else ""
    return (f"live: {snapshot.fps:.1f} fps, latency p50 {snapshot.p50_ms:.0f} ms p95 {snapshot.p95_ms:.0f} ms, "
            f"dropped {snapshot.dropped_input} in / {snapshot.dropped_output} out{resumed}, {step}")

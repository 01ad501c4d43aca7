"""ModelPool: the only owner of loaded models (ONNX Runtime sessions and dlib objects).

Loads each model once, on first use, even with many threads asking; keeps loaded models under a byte budget
by evicting the least recently used; counts loads and evictions for the run report.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import onnxruntime as ort

from slimfuse.models.runtime import RuntimeOptions, create_session
from slimfuse.models.store import Store

T = TypeVar("T")


@dataclass(frozen=True)
class PoolStats:
    loads: int
    evictions: int
    resident_bytes: int
    resident: tuple[str, ...]


@dataclass
class _Entry:
    value: Any
    nbytes: int


class ModelPool:
    def __init__(self, store: Store, runtime: RuntimeOptions = RuntimeOptions(), budget_bytes: int | None = None):
        self.store = store
        self.runtime = runtime
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._loads = 0
        self._evictions = 0

    def session(self, name: str) -> ort.InferenceSession:
        return self.get(name, lambda path: create_session(path, self.runtime))

    def get(self, name: str, load: Callable[[Path], T]) -> T:
        """The loaded model `name`, loading it with `load(verified_path)` if it is not resident."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is not None:
                self._entries.move_to_end(name)
                return entry.value
            name_lock = self._loading.setdefault(name, threading.Lock())
        with name_lock:  # one loader per model; the others wait and then find it resident
            with self._lock:
                entry = self._entries.get(name)
                if entry is not None:
                    self._entries.move_to_end(name)
                    return entry.value
            path = self.store.path(name)
            value = load(path)
            with self._lock:
                self._entries[name] = _Entry(value=value, nbytes=path.stat().st_size)
                self._loads += 1
                self._evict_over_budget(keep=name)
            return value

    def release(self, name: str) -> None:
        with self._lock:
            self._entries.pop(name, None)

    def release_all(self) -> None:
        with self._lock:
            self._entries.clear()

    def stats(self) -> PoolStats:
        with self._lock:
            return PoolStats(
                loads=self._loads,
                evictions=self._evictions,
                resident_bytes=sum(entry.nbytes for entry in self._entries.values()),
                resident=tuple(self._entries),
            )

    def _evict_over_budget(self, keep: str) -> None:
        if self.budget_bytes is None:
            return
        while sum(e.nbytes for e in self._entries.values()) > self.budget_bytes and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            if oldest == keep:
                break
            del self._entries[oldest]
            self._evictions += 1

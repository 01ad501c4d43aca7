"""The one-frame mailbox between two live stages: the newest item replaces one not yet taken, and each replaced
item is counted as dropped, so a slow stage makes frames drop instead of latency grow."""
from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class Closed(Exception):
    """The slot was closed and holds nothing more."""


class LatestSlot(Generic[T]):
    def __init__(self) -> None:
        self._item: T | None = None
        self._closed = False
        self._ready = threading.Condition()
        self.dropped = 0
        self.offered = 0

    def put(self, item: T) -> None:
        """Offer the newest item; an item still waiting is dropped."""
        with self._ready:
            if self._closed:
                return
            self.offered += 1
            if self._item is not None:
                self.dropped += 1
            self._item = item
            self._ready.notify()

    def take(self, timeout: float | None = None) -> T | None:
        """The newest item, waiting for one; None on timeout; Closed once closed and empty."""
        with self._ready:
            if not self._ready.wait_for(lambda: self._item is not None or self._closed, timeout):
                return None
            if self._item is None:
                raise Closed()
            item, self._item = self._item, None
            return item

    def close(self) -> None:
        """No more items: a waiting taker gets what is left, then Closed."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

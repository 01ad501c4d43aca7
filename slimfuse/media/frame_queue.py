"""The bounded queues between the decode, processing and encode threads: their size, end mark and polling."""
from __future__ import annotations

import queue

DEFAULT_QUEUE = 4
"""A frame queue this long keeps decode and encode busy while the processors work; each slot is one RGB frame."""
END = object()
"""Put after the last frame."""
POLL_S = 0.1
"""How often a blocked thread looks whether it was told to stop."""


def drain(items: queue.Queue[object]) -> None:
    """Throw away whatever is queued, so a thread blocked on a full queue can move on."""
    try:
        while True:
            items.get_nowait()
    except queue.Empty:
        pass

"""Running one measurement in a fresh (spawned) process, so its peak memory and its start-up are its own."""
from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable
from typing import Any

POLL_S = 1.0


def measure_in_fresh_process(target: Callable[..., None], *args: object) -> dict[str, Any]:
    """target(*args, result_queue) in a spawned process; what it puts on the queue. RuntimeError, instead of waiting
    for ever, when the process ends without putting anything (it crashed, or was killed for memory)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=target, args=(*args, results))
    process.start()
    try:
        while True:
            try:
                data: dict[str, Any] = results.get(timeout=POLL_S)
                return data
            except queue.Empty:
                if not process.is_alive() and results.empty():
                    raise RuntimeError(f"the measuring process ended without a result (exit code "
                                       f"{process.exitcode})") from None
    finally:
        process.join()

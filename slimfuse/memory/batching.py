"""Adaptive batching: run a model over N items in batches, and on an out-of-memory error halve the batch and retry
the same items, down to 1; when batch 1 still fails on a GPU provider, move the model to the CPU (through the
pool) and retry there. Each step is announced through notify and kept for the run report. Items are fed in order
and each output is kept exactly once, so nothing is dropped or duplicated whatever fails.

A model's batch size is shared by every thread of the run and only ever shrinks: the memory that failed once
will fail again.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from slimfuse.memory.limit import is_allocation_failure
from slimfuse.models.pool import ModelPool
from slimfuse.models.runtime import run_options
from slimfuse.models.store import Notify
from slimfuse.models.tensors import MAX_BATCH, batch_axis_free


@dataclass(frozen=True)
class BatchStep:
    """One back-off step, for the run report."""

    model: str
    action: Literal["halved", "moved_to_cpu"]
    batch_from: int
    batch_to: int
    reason: str


class AdaptiveBatcher:
    def __init__(self, pool: ModelPool, sizes: Mapping[str, int] | None = None, default: int = MAX_BATCH,
                 notify: Notify | None = None) -> None:
        """sizes: the starting batch size per model (the memory plan's); `default` for the others."""
        self.pool = pool
        self.default = max(1, default)
        self.notify: Notify = notify if notify is not None else pool.notify
        self._sizes: dict[str, int] = {name: max(1, size) for name, size in (sizes or {}).items()}
        self._steps: list[BatchStep] = []
        self._lock = threading.Lock()

    def size(self, model: str) -> int:
        with self._lock:
            return self._sizes.get(model, self.default)

    def steps(self) -> list[BatchStep]:
        with self._lock:
            return list(self._steps)

    def to_dict(self) -> dict[str, Any]:
        """For the run report: the batch size each model ended with, and every back-off step."""
        with self._lock:
            return {"batch_sizes": dict(self._sizes), "steps": [asdict(step) for step in self._steps]}

    def run(self, model: str, items: Mapping[str, np.ndarray], shared: Mapping[str, np.ndarray] | None = None
            ) -> np.ndarray:
        """The first output of `model`'s session for N items: `items` inputs have N on their first axis, `shared`
        inputs are the same for every item (given with a first axis of 1)."""
        shared = dict(shared or {})
        count = len(next(iter(items.values())))
        session = self.pool.session(model)
        settings = run_options(session, self.pool.runtime)
        outputs: list[np.ndarray] = []
        start = 0
        while start < count:
            stop = min(start + (self.size(model) if batch_axis_free(session) else 1), count)
            feeds = {name: value[start:stop] for name, value in items.items()}
            for name, value in shared.items():
                feeds[name] = np.repeat(value, stop - start, axis=0) if stop - start > 1 else value
            try:
                output = session.run(None, feeds, settings)[0]
            except Exception as error:  # noqa: BLE001 - ORT raises many types; only allocation failures back off
                if not is_allocation_failure(error):
                    raise
                self._back_off(model, stop - start, error)
                session = self.pool.session(model)
                settings = run_options(session, self.pool.runtime)
                continue
            outputs.append(output)
            start = stop
        return np.concatenate(outputs, axis=0)

    def _back_off(self, model: str, failed: int, error: Exception) -> None:
        """Halve the batch that failed, or at batch 1 move the model to the CPU; re-raise when neither is left."""
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if failed > 1:
            smaller = failed // 2
            with self._lock:
                self._sizes[model] = min(self._sizes.get(model, self.default), smaller)
                self._steps.append(BatchStep(model, "halved", failed, smaller, reason))
            self.notify(f"slimfuse: warning: {model} ran out of memory on a batch of {failed}; "
                        f"retrying with batches of {smaller}")
            return
        if not self.pool.on_gpu(model):
            raise error
        self.pool.move_to_cpu(model)
        with self._lock:
            self._steps.append(BatchStep(model, "moved_to_cpu", 1, 1, reason))
        self.notify(f"slimfuse: warning: {model} ran out of device memory on a single item; running it on the CPU")

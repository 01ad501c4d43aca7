"""Adaptive batching: run a model over N items in batches, and on an out-of-memory error halve the batch and retry
the same items, down to 1; when batch 1 still fails on a GPU provider, move the model to the CPU (through the
pool) and retry there. Each step is announced through notify and kept for the run report. Items are fed in order
and each output is kept exactly once, so nothing is dropped or duplicated whatever fails.

A model's batch size is shared by every thread of the run and only ever shrinks: the memory that failed once
will fail again. Under a CPU budget the plan's batch sizes are estimates; the first wide batch of each model is
measured (the process's peak RSS around it) and the size refined to what the budget holds.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from slimfuse.errors import is_allocation_failure
from slimfuse.memory.probe import MB, peak_rss_bytes, process_memory
from slimfuse.models.pool import ModelPool
from slimfuse.models.runtime import run_options
from slimfuse.models.store import Notify
from slimfuse.models.tensors import MAX_BATCH, batch_axis_free

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchStep:
    """One back-off step, for the run report."""

    model: str
    action: Literal["halved", "moved_to_cpu", "refined"]
    batch_from: int
    batch_to: int
    reason: str


class AdaptiveBatcher:
    def __init__(self, pool: ModelPool, sizes: Mapping[str, int] | None = None, default: int = MAX_BATCH,
                 notify: Notify | None = None, refine_within: int | None = None) -> None:
        """sizes: the starting batch size per model (the memory plan's); `default` for the others; refine_within:
        the RSS bytes the first wide batch of each model is measured against (None: not measured)."""
        self.pool = pool
        self.refine_within = refine_within
        self._measured: set[str] = set()
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
        return self.run_outputs(model, items, shared)[0]

    def run_outputs(self, model: str, items: Mapping[str, np.ndarray],
                    shared: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
        """Every output of `model`'s session for N items, in the session's order (see `run`)."""
        shared = dict(shared or {})
        count = len(next(iter(items.values())))
        session = self.pool.session(model)
        settings = run_options(session, self.pool.runtime)
        outputs: list[list[np.ndarray]] = []
        start = 0
        while start < count:
            stop = min(start + (self.size(model) if batch_axis_free(session) else 1), count)
            feeds = {name: value[start:stop] for name, value in items.items()}
            for name, value in shared.items():
                feeds[name] = np.repeat(value, stop - start, axis=0) if stop - start > 1 else value
            measure = self._first_wide_batch(model, stop - start)
            try:
                before, peak_before = (process_memory().rss_bytes, peak_rss_bytes()) if measure else (0, 0)
                output = session.run(None, feeds, settings)
                if measure:
                    self._refine(model, stop - start, before, peak_before)
            except Exception as error:  # noqa: BLE001 - ORT raises many types; only allocation failures back off
                if not is_allocation_failure(error):
                    raise
                self._back_off(model, stop - start, error)
                session = self.pool.session(model)
                settings = run_options(session, self.pool.runtime)
                continue
            outputs.append(list(output))
            start = stop
        return [np.concatenate(parts, axis=0) for parts in zip(*outputs, strict=True)]

    def _first_wide_batch(self, model: str, items: int) -> bool:
        """Whether this batch is the one to measure: the first of `model` with more than one item, under a budget."""
        if self.refine_within is None or items < 2:
            return False
        with self._lock:
            if model in self._measured:
                return False
            self._measured.add(model)
            return True

    def _refine(self, model: str, batch: int, before: int, peak_before: int) -> None:
        """Lower `model`'s batch size to what the budget holds, from the peak RSS its first wide batch reached. A
        peak that did not rise past the earlier one fits already (the earlier peak was within the budget)."""
        peak = peak_rss_bytes()
        assert self.refine_within is not None
        if peak <= max(peak_before, self.refine_within):
            return
        per_item = max(1, (peak - before) // batch)
        fits = max(1, (self.refine_within - before) // per_item)
        with self._lock:
            current = self._sizes.get(model, self.default)
            if fits >= current:
                return
            self._sizes[model] = fits
            reason = f"a batch of {batch} peaked at {peak / MB:.0f} MB RSS, {per_item / MB:.0f} MB per item"
            self._steps.append(BatchStep(model, "refined", current, fits, reason))
        self.notify(f"{model}: {reason}; batches of {fits} keep to the budget")

    def _back_off(self, model: str, failed: int, error: Exception) -> None:
        """Halve the batch that failed, or at batch 1 move the model to the CPU; re-raise when neither is left."""
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if failed > 1:
            smaller = failed // 2
            with self._lock:
                self._sizes[model] = min(self._sizes.get(model, self.default), smaller)
                self._steps.append(BatchStep(model, "halved", failed, smaller, reason))
            LOG.warning(f"{model} ran out of memory on a batch of {failed}; "
                        f"retrying with batches of {smaller}")
            return
        if not self.pool.on_gpu(model):
            raise error
        self.pool.move_to_cpu(model)
        with self._lock:
            self._steps.append(BatchStep(model, "moved_to_cpu", 1, 1, reason))
        LOG.warning(f"{model} ran out of device memory on a single item; running it on the CPU")

"""--report run.json: what a run did, written atomically at its end (or on error, with the error).

Stages are marked by the pipelines (models, sources, processing, write); each records its time, the process's RSS
(and the tree's, children included), its own peak RSS (sampled by a thread, slimfuse.memory.probe.PeakSampler),
the process's peak so far (the kernel's high-water mark, which the report never resets, so outside tools such as
`time -v` see the true peak too), and the models the pool holds then. The rest (the plan, the providers, the pool's
loads, the batch sizes) is read from the run's parts when the report is written, at the end."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from slimfuse.config import RunConfig
from slimfuse.errors import InterruptedByUser, SlimfuseError, Terminated, TerminatedBySignal
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.memory.probe import MB, PeakSampler, peak_rss_bytes, process_memory
from slimfuse.models.pool import ModelPool
from slimfuse.atomic import write_bytes_atomic


class Plan(Protocol):
    """What a run decided (slimfuse.pipeline.plan.RunPlan), as the report records it."""

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RunParts:
    """What a run was built with, as far as it got: the report reads them when it is written."""

    plan: Plan | None = None
    pool: ModelPool | None = None
    batcher: AdaptiveBatcher | None = None


class RunReport:
    def __init__(self, path: Path, config: RunConfig, target: Path | None = None) -> None:
        self.path = path
        self.config = config
        self.target = target
        self._stages: list[dict[str, Any]] = []
        self._started = self._last = time.perf_counter()
        self._sampler = PeakSampler()

    def stage(self, name: str, pool: ModelPool | None = None) -> None:
        """Mark the end of stage `name`: its time, memory and the models `pool` holds now."""
        now = time.perf_counter()
        memory = process_memory()
        entry: dict[str, Any] = {
            "stage": name, "seconds": round(now - self._last, 4), "at_seconds": round(now - self._started, 4),
            "rss_mb": round(memory.rss_bytes / MB, 1), "tree_rss_mb": round(memory.tree_rss_bytes / MB, 1),
            "peak_rss_mb": round(self._sampler.take() / MB, 1),
            "peak_so_far_mb": round(memory.peak_rss_bytes / MB, 1)}
        if pool is not None:
            stats = pool.stats()
            entry.update(resident=list(stats.resident), resident_mb=round(stats.resident_bytes / MB, 1),
                         loads=stats.loads, evictions=stats.evictions, released=list(stats.released))
        self._stages.append(entry)
        self._last = now

    def write(self, parts: RunParts = RunParts(), output: Path | None = None, error: BaseException | None = None,
              results: dict[str, Any] | None = None) -> None:
        config, pool = self.config, parts.pool
        self._sampler.stop()
        # The kernel's high-water mark: the whole run's peak, a spike between two samples included.
        peak = max([peak_rss_bytes() / MB, *(stage["peak_rss_mb"] for stage in self._stages)])
        report: dict[str, Any] = {
            "ok": error is None,
            "inputs": {"sources": [str(p) for p in config.sources],
                       "target": None if self.target is None else str(self.target),
                       "reference_face_image": None if config.faces.reference_face_image is None
                       else str(config.faces.reference_face_image)},
            "output": None if output is None else str(output),
            "config": config.options(),
            "providers": None if pool is None else pool.provider_report.to_dict(),
            "pool": None if pool is None else asdict(pool.stats()),
            "memory_plan": None if parts.plan is None else parts.plan.to_dict(),
            "batching": None if parts.batcher is None else parts.batcher.to_dict(),
            "stages": self._stages,
            "peak_per_stage": True,
            "peak_rss_mb": round(peak, 1),
            "seconds": round(time.perf_counter() - self._started, 4),
            "results": results or {},
            "error": None if error is None else _describe(error),
        }
        text = json.dumps(report, indent=2, default=str)
        write_bytes_atomic(self.path, text.encode("utf-8"))


def _describe(error: BaseException) -> dict[str, Any]:
    if isinstance(error, SlimfuseError):
        return {"type": type(error).__name__, "exit_code": error.exit_code, "message": error.message}
    if isinstance(error, Terminated):
        return {"type": "Terminated", "exit_code": TerminatedBySignal.exit_code, "message": "terminated (SIGTERM)"}
    if isinstance(error, KeyboardInterrupt):
        return {"type": "KeyboardInterrupt", "exit_code": InterruptedByUser.exit_code, "message": "interrupted"}
    lines = str(error).strip().splitlines() or [type(error).__name__]
    return {"type": type(error).__name__, "exit_code": 1, "message": lines[0]}

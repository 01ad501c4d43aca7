"""A batch from start to end: each item checked against the journal (complete ones are skipped), the rest turned
into tasks (a long video into keyframe segments when there is more than one worker), run on a pool, segments
joined, each finished item recorded in the journal, and a row per item for the summary. An item that fails does
not stop the others."""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from slimfuse.atomic import host_tag, remove_stale
from slimfuse.batch.items import BatchItem
from slimfuse.batch.journal import Journal, options_hash
from slimfuse.batch.pool import InlinePool, Pool, ProcessPool
from slimfuse.batch.segments import join_segments, plan_segments, scan_keyframes, with_warmup
from slimfuse.batch.worker import FrameProgress, Task, TaskError, TaskResult
from slimfuse.config import RunConfig
from slimfuse.errors import SlimfuseError
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import FrameSpan
from slimfuse.pipeline.run import plan_for, provenance_label

DONE, SKIPPED, FAILED = "done", "skipped", "failed"
NOT_RUN = "not run: an earlier item failed (--halt-on-error)"
# A video is cut into this many segments per worker (short ones balance the load and lose less to a dead worker),
# each at least MIN_SEGMENT_FRAMES long.
SEGMENTS_PER_WORKER = 2
MIN_SEGMENT_FRAMES = 25
# Frames before each segment that are only analysed, so its tracks and landmark smoothing match a single pass.
WARMUP_FRAMES = 30
Notify = Callable[[str], None]
SCRATCH_PREFIX = ".slimfuse-segments-"
_SCRATCH = re.compile(rf"^{re.escape(SCRATCH_PREFIX)}(?P<pid>\d+)@(?P<host>[A-Za-z0-9-]+)-[A-Za-z0-9_]+$")


def scratch_owner(name: str) -> int | None:
    """The process id of a segments folder made on this machine, from its name; None for any other name."""
    match = _SCRATCH.match(name)
    return int(match.group("pid")) if match and match.group("host") == host_tag() else None


@dataclass
class ItemRow:
    """One line of the summary (and of --report's items)."""

    target: str
    output: str
    status: str
    reason: str | None = None
    exit_code: int | None = None
    seconds: float = 0.0
    frames: int = 0
    segments: int = 0
    segment_seconds: list[float] = field(default_factory=list)
    split_seconds: float = 0.0
    join_seconds: float = 0.0
    join: str | None = None
    """"copied" or "re-encoded" for a video done in segments."""

    @property
    def has_output(self) -> bool:
        """Whether its output is there: written, or kept from an earlier run (not an item left by --halt-on-error)."""
        return self.status == DONE or (self.status == SKIPPED and self.reason != NOT_RUN)


@dataclass
class BatchResult:
    rows: list[ItemRow]
    seconds: float
    workers: int

    @property
    def failed(self) -> list[ItemRow]:
        return [row for row in self.rows if row.status == FAILED]

    def counts(self) -> dict[str, int]:
        return {status: sum(row.status == status for row in self.rows) for status in (DONE, SKIPPED, FAILED)}


@dataclass
class _Pending:
    item: BatchItem
    config: RunConfig
    options: dict[str, object]
    digest: str
    row: ItemRow
    started: float
    spans: list[FrameSpan] = field(default_factory=list)
    parts: dict[int, Path] = field(default_factory=dict)
    done: dict[int, TaskResult] = field(default_factory=dict)


class BatchProgress(Protocol):
    """What a batch reports as it goes (the command line draws it)."""

    def started(self, total: int) -> None: ...

    def finished(self, row: ItemRow) -> None: ...


class _Halted(Exception):
    """An item failed and --halt-on-error stops the batch: the pool cancels what it runs."""


class _Silent:
    def started(self, total: int) -> None:
        pass

    def finished(self, row: ItemRow) -> None:
        pass


def fit_workers(config: RunConfig, target: Path | None, asked: int, notify: Notify) -> int:
    """As many workers as asked, or fewer where their planned peaks together would exceed --memory-budget."""
    budget = config.memory.budget_bytes
    if budget is None or asked <= 1:
        return asked
    peak = plan_for(config, target).memory.estimated_peak_bytes
    fits = max(1, min(asked, budget // max(1, peak)))
    if fits < asked:
        notify(f"--workers {asked}: {fits} fit in --memory-budget {budget >> 20} MB "
               f"(each plans a peak of {peak >> 20} MB); running {fits}")
    return fits


def make_pool(workers: int, ray: str | None, progress: FrameProgress | None,
              device_ids: tuple[int, ...] | None = None) -> Pool:
    """device_ids: --execution-device-ids, for the local worker processes to take in turn (Ray gives its actors
    their GPUs itself; one process uses the first)."""
    if ray is not None:
        from slimfuse.batch.ray_pool import RayPool

        return RayPool(workers, ray)
    return InlinePool(progress) if workers <= 1 else ProcessPool(workers, device_ids)


class BatchRunner:
    def __init__(self, items: Sequence[BatchItem], options: Mapping[str, object], journal_dir: Path, pool: Pool,
                 progress: BatchProgress | None = None, notify: Notify = lambda message: None,
                 segments_per_worker: int = SEGMENTS_PER_WORKER, min_segment_frames: int = MIN_SEGMENT_FRAMES,
                 halt_on_error: bool = False) -> None:
        """halt_on_error: stop at the first item that fails (--halt-on-error); the items not done then are left."""
        self.items = list(items)
        self.options = dict(options)
        self.journal = Journal(journal_dir)
        self.pool = pool
        self.progress: BatchProgress = progress or _Silent()
        self.notify = notify
        self.pieces = max(1, pool.workers * segments_per_worker)
        self.min_frames = min_segment_frames
        self.halt_on_error = halt_on_error
        self._scratch: Path | None = None

    def run(self) -> BatchResult:
        started = time.perf_counter()
        self.progress.started(len(self.items))
        rows: list[ItemRow] = []
        pending: dict[int, _Pending] = {}
        tasks: list[Task] = []
        try:
            for index, item in enumerate(self.items):
                row, job = self._prepare(item)
                rows.append(row)
                if job is not None:
                    pending[index] = job
                    tasks.extend(self._tasks(index, job))
                else:
                    self.progress.finished(row)
                if self.halt_on_error and row.status == FAILED:
                    rows += [self._not_run(ItemRow(str(later.target), str(later.output), SKIPPED))
                             for later in self.items[index + 1:]]
                    break
            try:
                self.pool.run(tasks, lambda result: self._on_result(pending, result))
            except _Halted:
                for job in pending.values():  # started ones were stopped; their outputs were not written
                    self._not_run(job.row)
        finally:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
        return BatchResult(rows, time.perf_counter() - started, self.pool.workers)

    # --- before the work ---------------------------------------------------------------------------------------

    def _prepare(self, item: BatchItem) -> tuple[ItemRow, _Pending | None]:
        row = ItemRow(str(item.target), str(item.output), DONE)
        options = {**self.options, **item.overrides}
        try:
            config = RunConfig.from_options(item.sources, **options)
            digest = options_hash(config, item.target)
            if self.journal.is_complete(item.output, digest):
                row.status, row.reason = SKIPPED, "complete (journal)"
                return row, None
            item.output.parent.mkdir(parents=True, exist_ok=True)
        except SlimfuseError as exc:
            self._fail(row, TaskError(type(exc).__name__, exc.exit_code, exc.message))
            return row, None
        except OSError as exc:
            self._fail(row, TaskError(type(exc).__name__, 13, f"{item.output.parent}: {exc.strerror or exc}"))
            return row, None
        return row, _Pending(item, config, options, digest, row, time.perf_counter())

    def _tasks(self, index: int, job: _Pending) -> list[Task]:
        item = job.item
        whole = [Task(index, item.sources, job.options, item.target, item.output)]
        if not self._splits(job):
            return whole
        split_started = time.perf_counter()
        try:
            keyframes = scan_keyframes(item.target)
            spans = with_warmup(plan_segments(keyframes, self.pieces, self.min_frames), keyframes, WARMUP_FRAMES,
                                job.config.faces.face_detector_interval)
        except Exception:  # noqa: BLE001 - an unreadable video fails in its whole-item task with its own message
            return whole
        if len(spans) < 2:
            return whole
        job.spans = spans
        folder = Path(tempfile.mkdtemp(prefix=f".{item.output.name}.segments-", dir=self._scratch_dir(item)))
        job.parts = {number: folder / f"segment-{number:04d}{item.output.suffix}" for number in range(len(spans))}
        job.row.split_seconds = time.perf_counter() - split_started
        return [Task(index, item.sources, job.options, item.target, job.parts[number], number, span)
                for number, span in enumerate(spans)]

    def _splits(self, job: _Pending) -> bool:
        video = job.config.video
        return (self.pool.workers > 1 and job.item.video and video.trim_frame_start == 0
                and video.trim_frame_end is None and video.temp_frame_format is None
                and job.config.encode.output_video_fps is None)

    def _scratch_dir(self, item: BatchItem) -> Path:
        """Segments go into a folder of the batch's own beside the journal (a path every node reads, for Ray);
        folders left by batches on this machine whose process is gone (killed outright) are removed first."""
        if self._scratch is None:
            folder = self.journal.path.parent
            remove_stale(folder, self.notify, scratch_owner)
            self._scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}@{host_tag()}-", dir=folder))
        return self._scratch

    # --- as results come in ------------------------------------------------------------------------------------

    def _on_result(self, pending: dict[int, _Pending], result: TaskResult) -> Iterable[Task]:
        job = pending.get(result.task.item)
        if job is None:
            return []
        task = result.task
        if result.error is not None:
            if task.segment is not None and task.attempt < 2:
                self.notify(f"{task.target}: segment {task.segment} failed ({result.error.message}); redoing it")
                return [task.again()]
            self._fail(job.row, result.error)
            del pending[task.item]
            if self.halt_on_error:
                raise _Halted
            return []
        if task.segment is None:
            job.row.frames, job.row.seconds = result.frames, result.seconds
            self._finish(pending, task.item)
            return []
        job.done[task.segment] = result
        if len(job.done) == len(job.spans):
            self._join(job)
            self._finish(pending, task.item)
        return []

    def _join(self, job: _Pending) -> None:
        started = time.perf_counter()
        parts = [job.parts[number] for number in range(len(job.spans))]
        settings = job.config.encode_settings(0)
        joined = join_segments(probe(job.item.target), job.spans, parts, job.item.output, settings,
                               provenance_label(job.config), self.notify)
        for part in parts:
            part.unlink(missing_ok=True)
        row = job.row
        row.join_seconds = time.perf_counter() - started
        row.join = "copied" if joined.copied else "re-encoded"
        row.frames, row.segments = joined.frames, len(parts)
        row.segment_seconds = [round(job.done[number].seconds, 4) for number in range(len(parts))]

    def _finish(self, pending: dict[int, _Pending], index: int) -> None:
        job = pending.pop(index)
        job.row.seconds = job.row.seconds or time.perf_counter() - job.started
        self.journal.record(job.item.output, job.digest, job.item.target, job.row.seconds)
        self.progress.finished(job.row)

    def _not_run(self, row: ItemRow) -> ItemRow:
        row.status, row.reason = SKIPPED, NOT_RUN
        self.progress.finished(row)
        return row

    def _fail(self, row: ItemRow, error: TaskError) -> None:
        row.status, row.reason, row.exit_code = FAILED, error.message, error.exit_code
        self.progress.finished(row)

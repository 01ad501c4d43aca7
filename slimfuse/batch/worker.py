"""The unit of batch work and what runs it: a task (a whole item, or one keyframe segment of a video) done by a
Worker that keeps one Swapper, so models load once for every task with the same sources and options. The same
Worker runs in the batch's own process, in the local pool's processes and in Ray actors."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from slimfuse.media.destination import is_video
from slimfuse.errors import SlimfuseError
from slimfuse.media.video_reader import FrameSpan

if TYPE_CHECKING:  # the API loads the pipeline: imported on the first task
    from slimfuse.api import KeptSwapper

FrameProgress = Callable[[int, int | None], None]


@dataclass(frozen=True)
class Task:
    """item: the batch item's index; segment: the segment's index (None: the whole item)."""

    item: int
    sources: tuple[Path, ...]
    options: Mapping[str, object]
    target: Path
    output: Path
    segment: int | None = None
    span: FrameSpan | None = None
    attempt: int = 1

    def again(self) -> Task:
        return Task(self.item, self.sources, self.options, self.target, self.output, self.segment, self.span,
                    self.attempt + 1)


@dataclass(frozen=True)
class TaskError:
    name: str
    exit_code: int
    message: str


@dataclass(frozen=True)
class TaskResult:
    task: Task
    seconds: float
    frames: int = 0
    error: TaskError | None = None
    pid: int = field(default_factory=os.getpid)


class Worker:
    """Runs tasks with a kept Swapper, built again only when the sources or options change."""

    def __init__(self, device_id: int | None = None) -> None:
        """device_id: the GPU this worker's models use, in place of the tasks' --execution-device-ids (a pool's
        workers take those in turn)."""
        self._kept: KeptSwapper | None = None  # made on the first task
        self.device_id = device_id

    def run(self, task: Task, progress: FrameProgress | None = None) -> TaskResult:
        started = time.perf_counter()
        try:
            frames = self._swap(task, progress)
        except SlimfuseError as exc:
            return TaskResult(task, time.perf_counter() - started,
                              error=TaskError(type(exc).__name__, exc.exit_code, exc.message))
        except Exception as exc:  # noqa: BLE001 - one item's bug must not stop the batch; it is reported
            return TaskResult(task, time.perf_counter() - started,
                              error=TaskError(type(exc).__name__, 1, f"internal error: {type(exc).__name__}: {exc}"))
        return TaskResult(task, time.perf_counter() - started, frames)

    def close(self) -> None:
        if self._kept is not None:
            self._kept.close()

    def _swap(self, task: Task, progress: FrameProgress | None) -> int:
        from slimfuse.api import KeptSwapper

        if self._kept is None:
            self._kept = KeptSwapper()
        options = dict(task.options)
        if self.device_id is not None:
            options.pop("execution_device_ids", None)
            options["execution_device_id"] = self.device_id
        swapper = self._kept.get(list(task.sources), **options)  # its calls check the output before any work
        if is_video(task.target):
            return swapper.swap_video(task.target, task.output, progress, span=task.span).frames_written
        swapper.swap_image(task.target, output=task.output)
        return 1

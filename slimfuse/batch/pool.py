"""Where batch tasks run: in this process (one Worker), or in N worker processes on this machine, each keeping its
own Worker (and so its models). A process that dies mid-task has its task given to a new process; a task is
tried at most MAX_ATTEMPTS times. Pools share one interface, `run(tasks, on_result)`, which the Ray pool
(slimfuse.batch.ray_pool) has too."""
from __future__ import annotations

import multiprocessing
import queue
import signal
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.context import SpawnProcess
from typing import Protocol

from slimfuse.errors import Terminated
from slimfuse.batch.worker import FrameProgress, Task, TaskError, TaskResult, Worker

MAX_ATTEMPTS = 3
POLL_S = 0.2
STOP_GRACE_S = 30.0
OnResult = Callable[[TaskResult], Iterable[Task]]
"""Called with each finished task; returns the tasks to run next because of it (a failed segment redone)."""


class Pool(Protocol):
    workers: int

    def run(self, tasks: Iterable[Task], on_result: OnResult) -> None: ...

    def close(self) -> None: ...


class InlinePool:
    """Tasks one after another in this process; `progress` sees each video's frames."""

    workers = 1

    def __init__(self, progress: FrameProgress | None = None) -> None:
        self.progress = progress
        self._worker = Worker()

    def run(self, tasks: Iterable[Task], on_result: OnResult) -> None:
        pending = deque(tasks)
        while pending:
            pending.extend(on_result(self._worker.run(pending.popleft(), self.progress)))

    def close(self) -> None:
        self._worker.close()


def died(task: Task, how: str) -> TaskResult:
    return TaskResult(task, 0.0, error=TaskError("WorkerDied", 1, f"{task.target}: the worker {how}, "
                                                                  f"{task.attempt} times"))


def _serve(inbox: multiprocessing.Queue, outbox: multiprocessing.Queue, device_id: int | None = None) -> None:
    """A worker process: tasks from its inbox until None, each result to the shared outbox. Ctrl-C reaches the
    whole process group: the batch's process decides, and its SIGTERM unwinds the task once (its temporary files
    are removed)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminated)
    worker = Worker(device_id)
    try:
        while (task := inbox.get()) is not None:
            outbox.put(worker.run(task))
    except KeyboardInterrupt:
        return  # the batch's own process reports the interruption; the task's temporary files are gone
    finally:
        worker.close()


def _terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second one must not cut the clean-up short
    raise Terminated


@dataclass
class _Process:
    process: SpawnProcess
    inbox: multiprocessing.Queue
    device_id: int | None = None
    task: Task | None = None


class ProcessPool:
    """N worker processes (started with spawn, so none inherits this process's threads or sessions)."""

    def __init__(self, workers: int, device_ids: tuple[int, ...] | None = None) -> None:
        """device_ids: the GPUs of --execution-device-ids, taken by the workers in turn (a worker started again in
        a dead one's place keeps its GPU)."""
        self.workers = workers
        self._context = multiprocessing.get_context("spawn")
        self._outbox: multiprocessing.Queue = self._context.Queue()
        self._procs = [self._start(None if not device_ids else device_ids[index % len(device_ids)])
                       for index in range(workers)]

    def _start(self, device_id: int | None) -> _Process:
        inbox: multiprocessing.Queue = self._context.Queue()
        process = self._context.Process(target=_serve, args=(inbox, self._outbox, device_id), daemon=True,
                                        name="slimfuse-batch-worker")
        process.start()
        return _Process(process, inbox, device_id)

    def run(self, tasks: Iterable[Task], on_result: OnResult) -> None:
        try:
            self._run(deque(tasks), on_result)
        except BaseException:
            self.terminate()  # Ctrl-C, or a failure here: the workers stop and remove their temporary files
            raise

    def _run(self, pending: deque[Task], on_result: OnResult) -> None:
        while pending or any(proc.task is not None for proc in self._procs):
            for proc in self._procs:
                if proc.task is None and pending:
                    proc.task = pending.popleft()
                    proc.inbox.put(proc.task)
            try:
                result: TaskResult | None = self._outbox.get(timeout=POLL_S)
            except queue.Empty:
                result = None
            if result is not None:
                for proc in self._procs:
                    if proc.task is not None and proc.task == result.task:
                        proc.task = None
                        break
                pending.extend(on_result(result))
            self._replace_dead(pending, on_result)

    def _replace_dead(self, pending: deque[Task], on_result: OnResult) -> None:
        for index, proc in enumerate(self._procs):
            if proc.process.is_alive():
                continue
            lost = proc.task
            self._procs[index] = self._start(proc.device_id)
            if lost is None:
                continue
            if lost.attempt < MAX_ATTEMPTS:
                pending.appendleft(lost.again())
            else:
                pending.extend(on_result(died(lost, f"died (exit {proc.process.exitcode})")))

    def close(self) -> None:
        for proc in self._procs:
            if proc.process.is_alive():
                proc.inbox.put(None)
        for proc in self._procs:
            proc.process.join(timeout=10)
            if proc.process.is_alive():
                proc.process.terminate()
                proc.process.join()

    def terminate(self) -> None:
        """Stop every worker now (Ctrl-C): their unfinished outputs are temporary files that they remove."""
        for proc in self._procs:
            if proc.process.is_alive():
                proc.process.terminate()
        for proc in self._procs:
            proc.process.join(timeout=STOP_GRACE_S)
            if proc.process.is_alive():
                proc.process.kill()
                proc.process.join()

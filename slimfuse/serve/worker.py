"""A worker process: claims jobs from the store and runs them with a JobRunner (one kept slimfuse.Swapper, so its
models stay loaded while jobs come with the same sources and options).

    python -m slimfuse.serve.worker --data-dir DIR --name w1 [--memory-budget MB] [--lease-seconds S]

While a job runs, a heartbeat renews its lease; progress goes to the store, and a cancel request stops the job at
the next frame (its output, written under a temporary name, is removed). SIGTERM puts the running job back in
the queue. Outputs are written atomically into the data dir's outputs/, previews and face lists into scratch/.
How a job's end is recorded (`record_outcome`) is shared with the Ray actors' dispatcher (serve/ray_dispatch.py).
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from slimfuse.atomic import remove_stale
from slimfuse.errors import SlimfuseError, Terminated
from slimfuse.models.store import default_home
from slimfuse.serve.runner import JobCancelled, JobRunner, Progress
from slimfuse.serve.store import CANCELLED, FAILED, Job, JobStore, job_asset_ids

# How often the worker looks for work when the queue is empty, and records progress while a job runs (seconds).
IDLE_POLL_S = 0.05
PROGRESS_EVERY_S = 0.1
# How often a worker checks that its server still runs (seconds).
PARENT_POLL_S = 0.5
# Workers run at a lower priority than the API process, so status calls are answered at once while jobs run.
NICENESS = 10


class Worker:
    def __init__(self, store: JobStore, name: str, lease_seconds: float, budget_mb: float | None,
                 models_dir: Path | None = None, threads: int = 0) -> None:
        self.store = store
        self.name = name
        self.lease_seconds = lease_seconds
        self.budget_bytes = None if budget_mb is None else int(budget_mb * (1 << 20))
        self.models_dir = models_dir
        self.runner = JobRunner(store.data_dir, models_dir, threads)

    def serve(self, stop: threading.Event) -> None:
        """Claim and run jobs until `stop` is set, or until the server that started this worker is gone: then
        the job it runs is finished (its frames are not thrown away) and no other is claimed."""
        remove_stale(self.store.outputs_dir)  # outputs half-written by a worker that was killed
        self.store.add_worker(self.name, os.getpid())
        threading.Thread(target=_watch_parent, args=(os.getppid(), stop), name="slimfuse-parent", daemon=True).start()
        try:
            while not stop.is_set():
                job = self.store.claim(self.name, self.lease_seconds, self.budget_bytes)
                if job is None:
                    stop.wait(IDLE_POLL_S)
                    continue
                try:
                    self.run(job)
                except KeyboardInterrupt:  # SIGTERM: the job goes back to the queue for another worker
                    self.store.requeue_worker(self.name)
                    raise
        finally:
            self.store.remove_worker(self.name)

    def run(self, job: Job) -> None:
        with heartbeat(self.store, job.id, self.name, self.lease_seconds):
            record_outcome(self.store, job, self.name, lambda: self.runner.run(
                job.id, job.row["kind"], job.request, store_progress(self.store, job.id, self.name)),
                self.models_dir)


@contextmanager
def heartbeat(store: JobStore, job_id: str, worker: str, lease_seconds: float) -> Iterator[None]:
    """Renew a job's lease while the block runs."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(lease_seconds / 3):
            store.heartbeat(job_id, worker, lease_seconds)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def store_progress(store: JobStore, job_id: str, worker: str) -> Progress:
    """A job's progress recorded in the store (at most every PROGRESS_EVERY_S, and at the end); answers whether the
    user asked to cancel it."""
    last = [0.0, False]

    def report(done: int, total: int | None) -> bool:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S or (total is not None and done >= total):
            last[0] = now
            last[1] = store.progress(job_id, worker, done, total)
        return bool(last[1])

    return report


def record_outcome(store: JobStore, job: Job, worker: str, attempt: Callable[[], dict[str, Any]],
                   models_dir: Path | None) -> None:
    """Run `attempt` (the job's work: its report, with `output` and `output_bytes`) and record how it ended."""
    started = time.perf_counter()
    try:
        report = attempt()
    except JobCancelled:
        record_failure(store, job, worker, None, None, "", models_dir)
    except SlimfuseError as error:
        record_failure(store, job, worker, type(error).__name__, error.exit_code, error.message, models_dir)
    except MemoryError:
        record_failure(store, job, worker, "MemoryError", 1, "out of memory (try a smaller budget or "
                       "--target-face-size)", models_dir)
    except Exception as error:  # noqa: BLE001 - the job fails with one line; the worker goes on
        record_failure(store, job, worker, "InternalError", 1, f"internal error: {type(error).__name__}: {error}",
                       models_dir)
    else:
        report["seconds"] = round(time.perf_counter() - started, 3)
        record_success(store, job, worker, report)


def record_success(store: JobStore, job: Job, worker: str, report: dict[str, Any]) -> None:
    """The job's output (`output`, relative to the data dir, and `output_bytes`, taken out of `report`) and report."""
    output, size = report.pop("output", None), report.pop("output_bytes", 0)
    if not store.succeed(job.id, worker, output, size, report) and output:
        (store.data_dir / output).unlink(missing_ok=True)  # the job was taken from us meanwhile


def record_failure(store: JobStore, job: Job, worker: str, error: str | None, exit_code: int | None, message: str,
                   models_dir: Path | None) -> None:
    """The job failed with `error` (its exit code and one line, which the job's user reads), or (error None) it
    was cancelled while it ran."""
    if error is None:
        store.fail(job.id, worker, CANCELLED, message="cancelled while running; no output was written")
        return
    store.fail(job.id, worker, FAILED, error, exit_code, public_message(store, job, message, models_dir))


def public_message(store: JobStore, job: Job, message: str, models_dir: Path | None) -> str:
    """`message` as the job's user may read it: their uploads by the names they gave them, and no path of the
    server's (its data folder, its models, its home) spelled out."""
    request, user = job.request, job.row["user"]
    for asset in filter(None, (store.asset(user, asset_id) for asset_id in job_asset_ids(request))):
        for path in (store.asset_path(asset), store.asset_path(asset).relative_to(store.data_dir)):
            message = message.replace(str(path), asset["name"])  # a Ray actor names it relative to its folder
    return hide_paths(message, (store.data_dir, *([models_dir] if models_dir else []), default_home(), Path.home()))


def _watch_parent(parent: int, stop: threading.Event) -> None:
    """Set `stop` once the process that started this one is gone (this one is then another's child)."""
    while not stop.wait(PARENT_POLL_S):
        if os.getppid() != parent:
            print(f"slimfuse: worker {os.getpid()}: its server is gone; it finishes the job it runs and stops",
                  file=sys.stderr, flush=True)
            stop.set()


def hide_paths(message: str, folders: Sequence[Path]) -> str:
    """`message` with every path under one of `folders` cut to its file name (the folders named deepest first, so
    a folder inside another is cut whole)."""
    for folder in sorted({str(folder) for folder in folders}, key=len, reverse=True):
        message = re.sub(re.escape(folder) + r"(/[^\s:;,()'\"]*)?", lambda found: Path(found.group(0)).name, message)
    return message


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m slimfuse.serve.worker")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--memory-budget", type=float, default=None)
    parser.add_argument("--lease-seconds", type=float, default=10.0)
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(argv)
    os.nice(NICENESS)
    worker = Worker(JobStore(args.data_dir), args.name, args.lease_seconds, args.memory_budget, args.models_dir,
                    args.threads)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        worker.serve(threading.Event())
    except KeyboardInterrupt:
        return 0
    return 0


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()  # a KeyboardInterrupt: the job's temporary output is removed, the job requeued


if __name__ == "__main__":
    raise SystemExit(main())

"""`slimfuse serve`: the API in this process (uvicorn), the workers as child processes, and a supervisor thread
that starts a new worker when one dies (its job back in the queue first) and removes files past their retention."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from slimfuse.errors import UsageError
from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.store import JobStore

if TYPE_CHECKING:  # Ray is imported only when the server runs on it
    from slimfuse.serve.ray_dispatch import RayDispatcher

WATCH_EVERY_S = 0.25
SWEEP_EVERY_S = 60.0
# Previews and face lists are fetched once, right away; they are kept this long.
SCRATCH_SECONDS = 600.0
STOP_WAIT_S = 10.0


class Supervisor:
    def __init__(self, settings: ServeSettings, store: JobStore) -> None:
        self.settings = settings
        self.store = store
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="slimfuse-supervisor", daemon=True)
        self._lock = threading.Lock()

    def start(self) -> None:
        self._settle_previous_workers()
        for index in range(self.settings.workers):
            self._spawn(f"worker-{os.getpid()}-{index + 1}")
        self._thread.start()

    def _settle_previous_workers(self) -> None:
        """The workers a previous server of this data dir left: one still finishing a job (its server was killed)
        keeps it, so no finished frame is thrown away, and stops by itself after it; any other that still runs is
        stopped. The jobs of workers that are gone go back to the queue."""
        for worker in self.store.workers():
            process = _worker_process(worker["pid"], self.settings.data_dir)
            if process is not None and worker["job"] is not None:
                print(f"slimfuse: worker pid {worker['pid']} of a previous server is finishing job {worker['job']}; "
                      "it stops after it", file=sys.stderr, flush=True)
                continue
            if process is not None:
                print(f"slimfuse: stopping worker pid {worker['pid']} of a previous server", file=sys.stderr, flush=True)
                process.terminate()
                try:
                    process.wait(STOP_WAIT_S)
                except psutil.TimeoutExpired:
                    process.kill()
            self.store.remove_worker(worker["name"])
            self.store.requeue_worker(worker["name"])
        self.store.requeue_orphaned()

    def alive(self) -> int:
        with self._lock:
            return sum(process.poll() is None for process in self.workers.values())

    def pids(self) -> list[int]:
        with self._lock:
            return [process.pid for process in self.workers.values()]

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:
            for process in self.workers.values():
                process.terminate()
            deadline = time.monotonic() + STOP_WAIT_S
            for process in self.workers.values():
                try:
                    process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def _spawn(self, name: str) -> None:
        settings = self.settings
        command = [sys.executable, "-m", "slimfuse.serve.worker", "--data-dir", str(settings.data_dir),
                   "--name", name, "--lease-seconds", str(settings.lease_seconds),
                   "--threads", str(max(1, (os.cpu_count() or 1) // settings.workers))]
        if settings.memory_budget_mb is not None:
            command += ["--memory-budget", str(settings.memory_budget_mb)]
        if settings.models_dir is not None:
            command += ["--models-dir", str(settings.models_dir)]
        with self._lock:
            self.workers[name] = subprocess.Popen(command, stdin=subprocess.DEVNULL)

    def _watch(self) -> None:
        swept = 0.0
        while not self._stop.wait(WATCH_EVERY_S):
            with self._lock:
                dead = [name for name, process in self.workers.items() if process.poll() is not None]
            for name in dead:
                requeued = self.store.requeue_worker(name)
                print(f"slimfuse: worker {name} stopped (exit {self.workers[name].returncode}); {requeued} job(s) "
                      "back in the queue; starting a new worker", file=sys.stderr, flush=True)
                with self._lock:
                    del self.workers[name]
                self._spawn(f"{name.rsplit('.', 1)[0]}.{time.monotonic_ns()}")
            if time.monotonic() - swept >= SWEEP_EVERY_S:
                swept = time.monotonic()
                sweep(self.store, self.settings.retention_hours)


def _worker_process(pid: int, data_dir: Path) -> psutil.Process | None:
    """The process `pid` when it is a worker of this data dir (a pid may have been reused by another program)."""
    try:
        process = psutil.Process(pid)
        command = process.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    if "slimfuse.serve.worker" not in command or "--data-dir" not in command:
        return None
    given = Path(command[command.index("--data-dir") + 1])
    return process if given.resolve() == data_dir.resolve() else None


def sweep(store: JobStore, retention_hours: float) -> list[Path]:
    """Remove uploads and outputs older than the retention time, and old previews; returns what was removed."""
    now = time.time()
    removed = store.expire(now - retention_hours * 3600)
    for entry in store.scratch_dir.iterdir():
        if entry.is_file() and entry.stat().st_mtime < now - min(SCRATCH_SECONDS, retention_hours * 3600):
            removed.append(entry)
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def serve(settings: ServeSettings) -> int:
    import uvicorn

    from slimfuse.serve.app import create_app

    store = JobStore(settings.data_dir)
    if not settings.loopback and not store.has_tokens():
        raise UsageError(detail=f"--host {settings.host}: binding beyond loopback needs tokens; create one with "
                                f"`slimfuse serve token create NAME --data-dir {settings.data_dir}`")
    supervisor: Supervisor | RayDispatcher
    if settings.ray is None:
        supervisor = Supervisor(settings, store)
    else:
        from slimfuse.serve.ray_dispatch import RayDispatcher

        supervisor = RayDispatcher(settings, store, settings.ray)
    supervisor.start()
    try:
        app = create_app(settings, supervisor.alive)
        where = "" if settings.ray is None else f" on Ray ({settings.ray})"
        print(f"slimfuse: serving http://{settings.host}:{settings.port}/ (data in {settings.data_dir}, "
              f"{supervisor.alive()} workers{where})", file=sys.stderr, flush=True)
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning", access_log=False,
                    timeout_graceful_shutdown=STOP_WAIT_S)  # open event streams do not hold a shutdown up
    finally:
        supervisor.stop()
    return 0

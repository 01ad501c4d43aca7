"""`slimfuse bench serve`: the service's throughput and latency against the command line's.

A real `slimfuse serve` (child process, 127.0.0.1, a temporary data dir) swaps the astronaut's face into Grace
Hopper's portrait for 1, 4 and 8 concurrent users (each submits a job, follows its events to the end, submits the
next). Meanwhile a status poller times GET /v1/jobs/{id}, and the RSS of the server's whole process tree is
sampled. The same images are then swapped by `slimfuse swap`, one process after another, as a user without the
service would; the overhead ratio is the service's images/min at 4 users over the command line's.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

import httpx
import psutil

from slimfuse.samples import sample_path

START_TIMEOUT_S = 60.0
STATUS_EVERY_S = 0.02
RSS_EVERY_S = 0.05


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def child_env() -> dict[str, str]:
    """This slimfuse first on the path, in the server and its workers too."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


@contextmanager
def running_server(data_dir: Path, *options: str, workers: int = 2) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`slimfuse serve` on a free loopback port until the block ends: (its process, its base URL)."""
    port = free_port()
    command = [sys.executable, "-m", "slimfuse", "serve", "--port", str(port), "--data-dir", str(data_dir),
               "--workers", str(workers), *options]
    process = subprocess.Popen(command, env=child_env(), stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(process, base, workers)
        yield process, base
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(30)


def _wait_until_up(process: subprocess.Popen[bytes], base: str, workers: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"slimfuse serve exited with {process.returncode}")
        try:
            if httpx.get(f"{base}/v1/health", timeout=2).json()["workers"] >= workers:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)  # nothing to await but the port opening
    raise RuntimeError("slimfuse serve did not start")


def tree_rss(pid: int) -> int:
    """RSS of a process and all its descendants, bytes."""
    parent = psutil.Process(pid)
    total = 0
    for process in [parent, *parent.children(recursive=True)]:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def upload(client: httpx.Client, path: Path) -> str:
    response = client.post("/v1/assets", params={"name": path.name}, content=path.read_bytes())
    response.raise_for_status()
    return str(response.json()["id"])


def follow(client: httpx.Client, job_id: str, timeout: float = 300.0) -> Iterator[dict[str, Any]]:
    """The job's progress events until it ends (the server closes the stream then)."""
    with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=timeout) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data: "):
                yield json.loads(line[6:])


def run_job(client: httpx.Client, sources: list[str], target: str, **options: object) -> dict[str, Any]:
    """Submit a job and wait for its end; its last state."""
    response = client.post("/v1/jobs", json={"sources": sources, "target": target, "options": options})
    response.raise_for_status()
    return list(follow(client, response.json()["id"]))[-1]


@dataclass(frozen=True)
class Row:
    run: str
    users: int | None
    images: int
    seconds: float
    images_per_minute: float
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    status_p95_ms: float | None
    status_calls: int


def _p(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


class Sampling:
    """Threads that sample while a block runs: `loops` run each in its own thread until the block ends (they wait
    on `_stop`)."""

    def __init__(self, *loops: Callable[[], None]) -> None:
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=loop) for loop in loops]

    def __enter__(self) -> Self:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


class _Sampler(Sampling):
    """Polls the status of a running job (timing each call) and the server tree's RSS, in threads."""

    def __init__(self, base: str, pid: int) -> None:
        self.base, self.pid = base, pid
        self.peak = 0
        self.times: list[float] = []
        self.job: str | None = None
        super().__init__(self._status, self._rss)

    def _status(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as client:
            while not self._stop.wait(STATUS_EVERY_S):
                if self.job is None:
                    continue
                started = time.perf_counter()
                client.get(f"/v1/jobs/{self.job}").raise_for_status()
                self.times.append(time.perf_counter() - started)

    def _rss(self) -> None:
        while not self._stop.wait(RSS_EVERY_S):
            self.peak = max(self.peak, tree_rss(self.pid))


def _service_level(base: str, sampler: _Sampler, users: int, images: int, source: str, target: str) -> Row:
    latencies: list[float] = []
    lock = threading.Lock()
    counts = [images // users + (1 if index < images % users else 0) for index in range(users)]

    def user(count: int) -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            for _ in range(count):
                started = time.perf_counter()
                response = client.post("/v1/jobs", json={"sources": [source], "target": target})
                response.raise_for_status()
                sampler.job = response.json()["id"]
                ended = list(follow(client, sampler.job))[-1]
                if ended["state"] != "succeeded":
                    raise RuntimeError(f"job {ended['id']} {ended['state']}: {ended['message']}")
                with lock:
                    latencies.append(time.perf_counter() - started)

    before = len(sampler.times)
    started = time.perf_counter()
    with ThreadPoolExecutor(users) as pool:
        for done in [pool.submit(user, count) for count in counts if count]:
            done.result()
    seconds = time.perf_counter() - started
    status = sampler.times[before:]
    return Row(f"service, {users} user{'s' if users > 1 else ''}", users, images, round(seconds, 2),
               round(images / seconds * 60, 1), round(_p(latencies, 0.5) * 1000, 1), round(_p(latencies, 0.95) * 1000, 1),
               round(_p(status, 0.95) * 1000, 1) if status else None, len(status))


def _cli(images: int, source: Path, target: Path, folder: Path) -> Row:
    latencies = []
    started = time.perf_counter()
    for index in range(images):
        begun = time.perf_counter()
        subprocess.run([sys.executable, "-m", "slimfuse", "swap", "-s", str(source), "-t", str(target), "-o",
                        str(folder / f"cli_{index}.jpg"), "--quiet"], env=child_env(), check=True,
                       stdout=subprocess.DEVNULL)
        latencies.append(time.perf_counter() - begun)
    seconds = time.perf_counter() - started
    return Row("command line, one process per image, in sequence", None, images, round(seconds, 2),
               round(images / seconds * 60, 1), round(_p(latencies, 0.5) * 1000, 1),
               round(_p(latencies, 0.95) * 1000, 1), None, 0)


@dataclass(frozen=True)
class Results:
    rows: list[Row]
    peak_rss_mb: float
    memory_budget_mb: float | None
    workers: int
    overhead_ratio: float
    """Service images/min at 4 users (or the nearest level) over the command line's."""


def run(images: int = 48, users: tuple[int, ...] = (1, 4, 8), workers: int = 2, memory_budget: float | None = 1500,
        json_path: Path | None = None) -> Results:
    source, target = sample_path("astronaut"), sample_path("grace_hopper")
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-serve-") as scratch:
        folder = Path(scratch)
        options = ["--max-jobs-per-user", str(max(users) + 1)]
        if memory_budget is not None:
            options += ["--memory-budget", f"{memory_budget:g}"]
        with running_server(folder / "data", *options, workers=workers) as (process, base):
            with httpx.Client(base_url=base, timeout=60) as client:
                source_id, target_id = upload(client, source), upload(client, target)
                run_job(client, [source_id], target_id)  # warm-up: the workers load their models
                run_job(client, [source_id], target_id)
            with _Sampler(base, process.pid) as sampler:
                rows = [_service_level(base, sampler, count, images, source_id, target_id) for count in users]
            peak = sampler.peak
        rows.append(_cli(images, source, target, folder))
    reference = min(rows[:-1], key=lambda row: abs((row.users or 0) - 4))
    results = Results(rows, round(peak / (1 << 20), 1), memory_budget, workers,
                      round(reference.images_per_minute / rows[-1].images_per_minute, 2))
    print(markdown(results))
    if json_path is not None:
        json_path.write_text(json.dumps(asdict(results), indent=2))
    return results


def markdown(results: Results) -> str:
    lines = ["| run | images | s | images/min | latency p50 ms | latency p95 ms | status p95 ms (calls) |",
             "|---|---|---|---|---|---|---|"]
    for row in results.rows:
        status = "" if row.status_p95_ms is None else f"{row.status_p95_ms} ({row.status_calls})"
        lines.append(f"| {row.run} | {row.images} | {row.seconds} | {row.images_per_minute} | {row.latency_p50_ms} | "
                     f"{row.latency_p95_ms} | {status} |")
    budget = "no budget" if results.memory_budget_mb is None else f"--memory-budget {results.memory_budget_mb:g} MB"
    lines.append("")
    lines.append(f"{results.workers} workers, {budget}; peak RSS of the server and its workers: "
                 f"{results.peak_rss_mb:g} MB; service at 4 users / command line: {results.overhead_ratio}x")
    return "\n".join(lines)

"""`slimfuse bench serve --open-loop`: the service under an open-loop load, on local workers and on a two-node Ray
cluster.

Users arrive at a fixed rate whatever the server does (an open loop: a slow server gets a queue, not fewer users):
USERS users over SECONDS seconds, each uploading the two sample photos and submitting one image job, then following
it to its end. A poller times GET /v1/jobs/{id} of a job in flight every 50 ms, and memory is sampled: the server's
process tree, and on Ray every Ray process of this machine too (the cluster's nodes are on it). Every job must end:
succeeded, or failed with its reason; a job that does not end within the wait counts as lost.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from slimfuse.bench.serve import Sampling, follow, running_server, tree_rss, upload
from slimfuse.samples import sample_path

STATUS_EVERY_S = 0.05
MEMORY_EVERY_S = 0.2
JOB_WAIT_S = 600.0


@dataclass(frozen=True)
class LoadRow:
    run: str
    users: int
    seconds: float
    succeeded: int
    failed: int
    lost: int
    jobs_per_minute: float
    latency_p50_s: float
    latency_p95_s: float
    status_p95_ms: float
    peak_memory_mb: float


@dataclass
class _User:
    arrived: float
    latency: float | None = None
    state: str = "lost"
    reason: str | None = None


def _p(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))] if ordered else float("nan")


class _Watch(Sampling):
    """Times status calls of the jobs in flight and samples memory, in threads."""

    def __init__(self, base: str, pid: int, ray: bool) -> None:
        self.base, self.pid, self.ray = base, pid, ray
        self.flying: set[str] = set()
        self.times: list[float] = []
        self.peak = 0
        super().__init__(self._status, self._memory)

    def _status(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as client:
            while not self._stop.wait(STATUS_EVERY_S):
                job = next(iter(set(self.flying)), None)
                if job is not None:
                    started = time.perf_counter()
                    client.get(f"/v1/jobs/{job}")
                    self.times.append(time.perf_counter() - started)

    def _memory(self) -> None:
        while not self._stop.wait(MEMORY_EVERY_S):
            total = tree_rss(self.pid)
            if self.ray:  # the cluster's nodes run on this machine, outside the server's tree
                total += sum(_rss(process) for process in psutil.process_iter(["name", "cmdline"])
                             if _is_ray(process))
            self.peak = max(self.peak, total)


def _rss(process: psutil.Process) -> int:
    try:
        return int(process.memory_info().rss)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0


def _is_ray(process: psutil.Process) -> bool:
    command = " ".join(process.info.get("cmdline") or [])
    return "ray::" in command or "raylet" in command or "gcs_server" in command or "ray/_private" in command


def _user(base: str, watch: _Watch, user: _User) -> None:
    astronaut, grace_hopper = sample_path("astronaut"), sample_path("grace_hopper")
    with httpx.Client(base_url=base, timeout=60) as client:
        try:
            source, target = upload(client, astronaut), upload(client, grace_hopper)
            started = time.perf_counter()
            response = client.post("/v1/jobs", json={"sources": [source], "target": target})
            response.raise_for_status()
            job = response.json()["id"]
            watch.flying.add(job)
            ended = list(follow(client, job, timeout=JOB_WAIT_S))[-1]
            watch.flying.discard(job)
            user.latency = time.perf_counter() - started
            user.state, user.reason = ended["state"], ended.get("message")
        except httpx.HTTPError as exc:
            user.state, user.reason = "failed", f"{type(exc).__name__}: {exc}"


def _load(run: str, base: str, pid: int, users: int, seconds: float, ray: bool) -> tuple[LoadRow, list[_User]]:
    gap = seconds / users
    arrivals = [_User(arrived=index * gap) for index in range(users)]
    with _Watch(base, pid, ray) as watch, ThreadPoolExecutor(users) as pool:
        started = time.perf_counter()
        futures = []
        for user in arrivals:  # the open loop: each arrives on time, whatever the server does
            wait = started + user.arrived - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            futures.append(pool.submit(_user, base, watch, user))
        for future in futures:
            future.result()
        elapsed = time.perf_counter() - started
    latencies = [user.latency for user in arrivals if user.latency is not None and user.state == "succeeded"]
    count = {state: sum(user.state == state for user in arrivals) for state in ("succeeded", "failed", "lost")}
    row = LoadRow(run, users, round(elapsed, 1), count["succeeded"], count["failed"] + sum(
        user.state == "cancelled" for user in arrivals), count["lost"], round(count["succeeded"] / elapsed * 60, 1),
        round(_p(latencies, 0.5), 2), round(_p(latencies, 0.95), 2), round(_p(watch.times, 0.95) * 1000, 1),
        round(watch.peak / (1 << 20), 1))
    return row, arrivals


@contextmanager
def two_node_cluster() -> Iterator[Any]:
    """A Ray cluster on this machine (ray.cluster_utils.Cluster): a head that runs no actor and two nodes of one CPU,
    on loopback, token auth off, its files in a folder removed at the end (also this process's environment while it
    runs, so the servers it starts join it). `.address`, `.list_all_nodes()`, `.remove_node(node)`."""
    from ray.cluster_utils import Cluster

    from slimfuse.batch.ray_pool import LOOPBACK, LOOPBACK_ENV

    saved = {name: os.environ.get(name) for name in ("RAY_AUTH_MODE", "RAY_TMPDIR", *LOOPBACK_ENV)}
    folder = tempfile.mkdtemp(prefix="sfbr-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    os.environ.update({"RAY_AUTH_MODE": "disabled", "RAY_TMPDIR": folder, **LOOPBACK_ENV})
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "node_ip_address": LOOPBACK,
                                                            "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK)
        yield cluster
    finally:
        cluster.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run(users: int = 50, seconds: float = 120.0, workers: int = 2, memory_budget: float | None = 1500,
        ray: bool = True, json_path: Path | None = None, plot_path: Path | None = None) -> list[LoadRow]:
    options = ["--max-jobs-per-user", str(users + 1), "--max-storage-mb", "100000"]
    if memory_budget is not None:
        options += ["--memory-budget", f"{memory_budget:g}"]
    rows: list[LoadRow] = []
    timelines: dict[str, list[_User]] = {}
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-load-") as scratch:
        with running_server(Path(scratch) / "local", *options, workers=workers) as (process, base):
            _warm(base)
            row, timelines[row.run] = _load(f"{workers} local workers", base, process.pid, users, seconds, False)
            rows.append(row)
        if ray:
            with two_node_cluster() as cluster, running_server(Path(scratch) / "ray", *options, "--ray",
                                                              str(cluster.address), workers=2) as (process, base):
                _warm(base)
                row, timelines[row.run] = _load("Ray, two nodes of one CPU", base, process.pid, users, seconds, True)
                rows.append(row)
    print(markdown(rows, users, seconds))
    if json_path is not None:
        json_path.write_text(json.dumps({"users": users, "seconds": seconds, "rows": [asdict(row) for row in rows],
                                         "latencies": {name: [asdict(user) for user in people]
                                                       for name, people in timelines.items()}}, indent=2))
    if plot_path is not None:
        plot(timelines, plot_path)
    return rows


def _warm(base: str) -> None:
    """Two jobs before the load: the workers (or actors) load their models."""
    with httpx.Client(base_url=base, timeout=300) as client:
        source, target = (upload(client, sample_path(name)) for name in ("astronaut", "grace_hopper"))
        for _ in range(2):
            response = client.post("/v1/jobs", json={"sources": [source], "target": target})
            response.raise_for_status()
            list(follow(client, response.json()["id"]))


def markdown(rows: list[LoadRow], users: int, seconds: float) -> str:
    lines = [f"| run ({users} users over {seconds:g} s) | succeeded | failed | lost | jobs/min | latency p50 s | "
             "latency p95 s | status p95 ms | peak memory MB |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {row.run} | {row.succeeded} | {row.failed} | {row.lost} | {row.jobs_per_minute} | "
              f"{row.latency_p50_s} | {row.latency_p95_s} | {row.status_p95_ms} | {row.peak_memory_mb} |"
              for row in rows]
    return "\n".join(lines)


def plot(timelines: dict[str, list[Any]], path: Path) -> None:
    """Each job's latency against its user's arrival, one series per run."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 4.5))
    for name, people in timelines.items():
        done = [user for user in people if user.latency is not None]
        axes.plot([user.arrived for user in done], [user.latency for user in done], marker="o", markersize=3,
                  label=name)
    axes.set_xlabel("user arrival (s into the load)")
    axes.set_ylabel("job latency, submission to end (s)")
    axes.set_title("slimfuse serve under an open-loop load")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)

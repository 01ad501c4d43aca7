"""Batch tasks on a Ray cluster (the optional `ray` extra): one actor per worker, each keeping a Worker (and so a
Swapper with its models loaded), one task in flight per actor, so what runs at once is bounded by the workers the
memory plan allows. Inputs and outputs are paths that every node reads and writes (a shared folder). An actor that
dies mid-task is replaced and its task given to another; Ctrl-C cancels the tasks in flight (they remove their
temporary files) and then ends the actors."""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from slimfuse.batch.pool import MAX_ATTEMPTS, OnResult, died
from slimfuse.batch.worker import Task, TaskResult, Worker
from slimfuse.errors import RayUnavailableError

CANCEL_GRACE_S = 10.0
POLL_S = 0.5
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class SwapActor:
    """What each Ray actor holds: a Worker, kept between tasks."""

    def __init__(self) -> None:
        self.worker = Worker()

    def run(self, task: Task) -> TaskResult:
        return self.worker.run(task)

    def pid(self) -> int:
        return os.getpid()


def connect(address: str) -> bool:
    """Join the Ray cluster at `address` ('auto': this machine's, or a new local one on the loopback address), this
    package first on its workers' path; whether this call started Ray (a Ray already initialised in this process, a
    test's cluster, is used as it is). RayUnavailableError when the extra is missing or the cluster cannot be
    reached."""
    ray = ray_module()
    if ray.is_initialized():
        return False
    path = os.pathsep.join(part for part in (PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")) if part)
    local: dict[str, Any] = {}
    env = {"PYTHONPATH": path}
    if address == "auto":  # a cluster of this machine alone: every process on the loopback address
        local = {"_node_ip_address": LOOPBACK}
        env.update(LOOPBACK_ENV)
        os.environ.update(LOOPBACK_ENV)
    try:
        ray.init(address=None if address == "auto" else address, log_to_driver=False,
                 runtime_env={"env_vars": env}, **local)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailableError(detail=f"cannot reach the Ray cluster at {address} ({exc})") from exc
    return True


def ray_module() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(detail="the ray extra is not installed: pip install 'slimfuse[ray]'") from exc
    return ray


LOOPBACK = "127.0.0.1"
# Ray finds a node's address by asking the network (it would pick this machine's outward address) unless told it is
# a single-node cluster; this setting makes its processes use the loopback address instead.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


class RayPool:
    """address: 'auto' (the cluster this machine belongs to, or a new local one) or a cluster's address. A Ray
    already initialised in this process (a test's local cluster) is used as it is."""

    def __init__(self, workers: int, address: str = "auto") -> None:
        ray = self._ray = ray_module()
        self.workers = workers
        self._started = connect(address)
        self._actor_class = ray.remote(num_cpus=1, max_restarts=0)(SwapActor)
        self.actors = [self._actor_class.remote() for _ in range(workers)]

    def run(self, tasks: Iterable[Task], on_result: OnResult) -> None:
        ray = self._ray
        pending = deque(tasks)
        idle = deque(self.actors)
        flying: dict[Any, tuple[Any, Task]] = {}
        try:
            while pending or flying:
                while idle and pending:
                    actor, task = idle.popleft(), pending.popleft()
                    flying[actor.run.remote(task)] = (actor, task)
                done, _ = ray.wait(list(flying), num_returns=1, timeout=POLL_S)  # back in Python for Ctrl-C
                for ref in done:
                    actor, task = flying.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayActorError:
                        idle.append(self._replace(actor))
                        if task.attempt < MAX_ATTEMPTS:
                            pending.appendleft(task.again())
                        else:
                            pending.extend(on_result(died(task, "died")))
                        continue
                    idle.append(actor)
                    pending.extend(on_result(result))
        except BaseException:
            self._cancel(list(flying))
            raise

    def _replace(self, dead: Any) -> Any:
        fresh = self._actor_class.remote()
        self.actors = [fresh if actor == dead else actor for actor in self.actors]
        return fresh

    def _cancel(self, refs: list[Any]) -> None:
        ray = self._ray
        for ref in refs:
            ray.cancel(ref)
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S)
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []

    def close(self) -> None:
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
        if self._started:
            self._ray.shutdown()

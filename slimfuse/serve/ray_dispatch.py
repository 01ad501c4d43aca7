"""`slimfuse serve --ray auto|ADDRESS`: jobs run on Ray actors across a cluster, while the SQLite store on the API
node stays the durable record.

The API process holds a dispatcher thread in place of local worker processes. It claims jobs from the store as a
worker would (one per idle actor, within the server's --memory-budget), sends each to an actor with its input files
through Ray's object store, renews the job's lease while it runs, copies the actor's progress into the store and a
cancel request back to the actor, and writes the output the actor sends back into the data dir. Each actor keeps a
JobRunner (one slimfuse.Swapper with its models loaded) in a folder of its own on its node, asks for one CPU, and
one GPU where the cluster has GPUs for it. An actor that dies (its node lost) fails its job's call: the job goes
back to the queue and runs on another actor, from its first frame, and the actor is replaced.
"""
from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slimfuse.atomic import write_bytes_atomic
from slimfuse.batch.ray_pool import connect, ray_module
from slimfuse.errors import SlimfuseError
from slimfuse.serve.runner import JobCancelled, JobRunner, job_inputs
from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.store import Job, JobStore
from slimfuse.serve.worker import record_failure, record_success

POLL_S = 0.2
"""How often the dispatcher looks at its actors (new work, progress, ends)."""


class ServeActor:
    """What each Ray actor holds: a JobRunner in a folder of its own, and the progress of the job it runs (asked for
    by the dispatcher while `run` works: the actor takes two calls at once)."""

    def __init__(self, models_dir: str | None, threads: int) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="slimfuse-ray-"))
        self.runner = JobRunner(self.folder, None if models_dir is None else Path(models_dir), threads)
        self.done: tuple[int, int | None] = (0, None)
        self.cancelled = False

    def node(self) -> str:
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def run(self, job_id: str, kind: str, request: dict[str, Any], names: list[str],
            *contents: bytes) -> dict[str, Any]:
        """Run a job on the files sent with it; its report and output bytes, or its error (name, exit code, one
        line naming files relative to the job's folder)."""
        self.done, self.cancelled = (0, None), False
        try:
            for name, content in zip(names, contents, strict=True):
                path = self.folder / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
            report = self.runner.run(job_id, kind, request, self._progress)
            report["content"] = (self.folder / report["output"]).read_bytes()
            return {"report": report}
        except JobCancelled:
            return {"error": None}
        except SlimfuseError as error:
            return {"error": type(error).__name__, "exit_code": error.exit_code, "message": self._relative(error.message)}
        except Exception as error:  # noqa: BLE001 - the job fails with one line; the actor goes on
            return {"error": "InternalError", "exit_code": 1,
                    "message": self._relative(f"internal error: {type(error).__name__}: {error}")}
        finally:
            for name in (*names, f"outputs/{job_id}", f"scratch/{job_id}"):
                for path in self.folder.glob(f"{name}*"):
                    path.unlink(missing_ok=True)

    def progress(self) -> tuple[int, int | None]:
        return self.done

    def cancel(self) -> None:
        self.cancelled = True

    def _progress(self, done: int, total: int | None) -> bool:
        self.done = (done, total)
        return self.cancelled

    def _relative(self, message: str) -> str:
        return message.replace(f"{self.folder}{os.sep}", "")


@dataclass
class _Flight:
    job: Job
    ref: Any
    started: float
    progress: Any = None
    """The pending progress call, if any."""


class RayDispatcher:
    """The server's workers as Ray actors (see the module's docstring). `alive` and `stop` as the local
    supervisor's."""

    def __init__(self, settings: ServeSettings, store: JobStore, address: str) -> None:
        self.settings = settings
        self.store = store
        ray = self._ray = ray_module()
        self._started = connect(address)
        resources = ray.cluster_resources()
        self.size = max(1, min(settings.workers, int(resources.get("CPU", 1))))  # what the cluster can run at once
        gpus = 1 if resources.get("GPU", 0) >= self.size else 0
        self._actor_class = ray.remote(num_cpus=1, num_gpus=gpus, max_restarts=0, max_concurrency=2)(ServeActor)
        self.actors: list[Any] = [self._new_actor() for _ in range(self.size)]
        self._nodes: list[Any] = [actor.node.remote() for actor in self.actors]
        """Each actor's node, asked for as it starts: an actor takes jobs once it has answered (one waiting for
        room in the cluster takes none)."""
        self.names: list[str | None] = [None] * self.size
        self._flights: dict[int, _Flight] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._dispatch, name="slimfuse-ray", daemon=True)

    def start(self) -> None:
        self.store.requeue_orphaned()  # jobs a previous server's workers or actors left running
        self._thread.start()

    def alive(self) -> int:
        return sum(name is not None for name in self.names)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        for index, flight in self._flights.items():
            self._ray.cancel(flight.ref)
            self.store.requeue_worker(str(self.names[index]))
        for actor in self.actors:
            self._ray.kill(actor)
        if self._started:
            self._ray.shutdown()

    def _new_actor(self) -> Any:
        models_dir = self.settings.models_dir
        threads = 1  # one CPU each: the actor's models take one thread, as a local worker's share would
        return self._actor_class.remote(None if models_dir is None else str(models_dir), threads)

    def _ready(self, index: int) -> bool:
        """Whether actor `index` runs (it answered where): its worker name, the slot and the node, is then set."""
        if self.names[index] is None:
            answered, _ = self._ray.wait([self._nodes[index]], timeout=0)
            if answered:
                self.names[index] = f"ray-{index}@{self._ray.get(answered[0])[:12]}"
        return self.names[index] is not None

    def _dispatch(self) -> None:
        budget = self.settings.memory_budget_mb
        budget_bytes = None if budget is None else int(budget * (1 << 20))
        lease = self.settings.lease_seconds
        while not self._stop.wait(POLL_S):
            for index in range(len(self.actors)):
                if index not in self._flights and self._ready(index):
                    job = self.store.claim(str(self.names[index]), lease, budget_bytes)
                    if job is not None:
                        self._send(index, job)
            for index, flight in list(self._flights.items()):
                self._watch(index, flight, lease)

    def _send(self, index: int, job: Job) -> None:
        request = job.request
        names = job_inputs(request)
        refs = [self._ray.put((self.store.data_dir / name).read_bytes()) for name in names]
        ref = self.actors[index].run.remote(job.id, job.row["kind"], request, names, *refs)
        self._flights[index] = _Flight(job, ref, time.monotonic())

    def _watch(self, index: int, flight: _Flight, lease: float) -> None:
        ray, name = self._ray, str(self.names[index])
        done, _ = ray.wait([flight.ref], timeout=0)
        if done:
            del self._flights[index]
            try:
                outcome = ray.get(flight.ref)
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError):  # its node was lost
                self.store.requeue_worker(name)
                self.actors[index] = self._new_actor()
                self._nodes[index], self.names[index] = self.actors[index].node.remote(), None
                return
            self._record(flight.job, name, outcome, time.monotonic() - flight.started)
            return
        self.store.heartbeat(flight.job.id, name, lease)
        if flight.progress is not None:
            ready, _ = ray.wait([flight.progress], timeout=0)
            if not ready:
                return
            try:
                frames, total = ray.get(flight.progress)
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError):
                return  # the run's own call says what happened
            if frames and self.store.progress(flight.job.id, name, frames, total):
                self.actors[index].cancel.remote()
        flight.progress = self.actors[index].progress.remote()

    def _record(self, job: Job, worker: str, outcome: dict[str, Any], seconds: float) -> None:
        if "report" not in outcome:
            record_failure(self.store, job, worker, outcome["error"], outcome.get("exit_code"),
                           outcome.get("message", ""), self.settings.models_dir)
            return
        report = outcome["report"]
        destination = self.store.data_dir / report["output"]
        destination.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(destination, report.pop("content"))  # whole or not at all, as every output
        record_success(self.store, job, worker, {**report, "seconds": round(seconds, 3)})

"""A worker process: claims jobs from the store and runs them with one slimfuse.Swapper, kept between jobs of the
same sources and options so its models stay loaded.

    python -m slimfuse.serve.worker --data-dir DIR --name w1 [--memory-budget MB] [--lease-seconds S]

While a job runs, a heartbeat renews its lease; progress goes to the store, and a cancel request stops the job at
the next frame (its output, written under a temporary name, is removed). SIGTERM puts the running job back in
the queue. Outputs are written atomically into the data dir's outputs/, previews and face lists into scratch/.
"""
from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from slimfuse.api import KeptSwapper, Swapper
from slimfuse.atomic import remove_stale, write_bytes_atomic
from slimfuse.errors import SlimfuseError, Terminated
from slimfuse.media.image_io import read_image
from slimfuse.media.video_reader import VideoReader
from slimfuse.models.store import default_home
from slimfuse.serve.planning import CLIENT_OPTIONS
from slimfuse.serve.store import CANCELLED, FACES, FAILED, PREVIEW, Job, JobStore

# How often the worker looks for work when the queue is empty, and records progress while a job runs (seconds).
IDLE_POLL_S = 0.05
PROGRESS_EVERY_S = 0.1
# Previews are scaled down to at most this many pixels on their longer side.
PREVIEW_PX = 960
# How often a worker checks that its server still runs (seconds).
PARENT_POLL_S = 0.5
# Workers run at a lower priority than the API process, so status calls are answered at once while jobs run.
NICENESS = 10


class JobCancelled(Exception):
    """The user cancelled the running job."""


class Worker:
    def __init__(self, store: JobStore, name: str, lease_seconds: float, budget_mb: float | None,
                 models_dir: Path | None = None, threads: int = 0) -> None:
        self.store = store
        self.name = name
        self.lease_seconds = lease_seconds
        self.budget_bytes = None if budget_mb is None else int(budget_mb * (1 << 20))
        self.models_dir = models_dir
        self.threads = threads
        """ONNX Runtime threads per model (0: its own choice): the server shares the cores among its workers."""
        self._kept = KeptSwapper()

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
        beating = threading.Event()
        heartbeat = threading.Thread(target=self._beat, args=(job.id, beating), daemon=True)
        heartbeat.start()
        started = time.perf_counter()
        try:
            report = self._do(job)
        except JobCancelled:
            self.store.fail(job.id, self.name, CANCELLED, message="cancelled while running; no output was written")
        except SlimfuseError as error:
            self.store.fail(job.id, self.name, FAILED, type(error).__name__, error.exit_code,
                            self._public(job, error.message))
        except MemoryError:
            self.store.fail(job.id, self.name, FAILED, "MemoryError", 1, "out of memory (try a smaller budget or "
                            "--target-face-size)")
        except Exception as error:  # noqa: BLE001 - the job fails with one line; the worker goes on
            self.store.fail(job.id, self.name, FAILED, "InternalError", 1,
                            self._public(job, f"internal error: {type(error).__name__}: {error}"))
        else:
            report["seconds"] = round(time.perf_counter() - started, 3)
            output, size = report.pop("output", None), report.pop("output_bytes", 0)
            if not self.store.succeed(job.id, self.name, output, size, report) and output:
                (self.store.data_dir / output).unlink(missing_ok=True)  # the job was taken from us meanwhile
        finally:
            beating.set()
            heartbeat.join()

    def _public(self, job: Job, message: str) -> str:
        """`message` as the job's user may read it: their uploads by the names they gave them, and no path of the
        server's (its data folder, its models, its home) spelled out."""
        request, user = job.request, job.row["user"]
        ids = [*request.get("source_ids", ()), *([request["target_id"]] if "target_id" in request else [])]
        for asset in filter(None, (self.store.asset(user, asset_id) for asset_id in ids)):
            message = message.replace(str(self.store.asset_path(asset)), asset["name"])
        return hide_paths(message, (self.store.data_dir, *([self.models_dir] if self.models_dir else []),
                                    default_home(), Path.home()))

    def _beat(self, job_id: str, stop: threading.Event) -> None:
        while not stop.wait(self.lease_seconds / 3):
            self.store.heartbeat(job_id, self.name, self.lease_seconds)

    def _do(self, job: Job) -> dict[str, Any]:
        request = job.request
        if job.row["kind"] == FACES:
            return self._faces(job, request)
        if job.row["kind"] == PREVIEW:
            return self._preview(job, request)
        return self._swap(job, request)

    def _swapper_for(self, sources: list[str], options: dict[str, Any]) -> Swapper:
        """The kept Swapper when the sources and options are the same, else a new one (the old one released)."""
        return self._kept.get(sources, **options, models_dir=self.models_dir, execution_thread_count=self.threads)

    def _path(self, relative: str) -> str:
        return str(self.store.data_dir / relative)

    def _swap(self, job: Job, request: dict[str, Any]) -> dict[str, Any]:
        target = Path(self._path(request["target"]))
        options = dict(request["options"])
        reference = request.get("reference")
        if reference is not None:
            options["face_selector_mode"] = "reference"
            options["reference_face_position"] = int(reference["position"])
            options["reference_face_image"] = Path(self._reference_image(job, target, int(reference.get("frame", 0))))
        swapper = self._swapper_for([self._path(source) for source in request["sources"]], options)
        relative = f"outputs/{job.id}{request['suffix']}"
        output = self.store.data_dir / relative
        if request["kind"] == "video":
            result = swapper.swap_video(target, output, progress=self._progress(job.id))
            report: dict[str, Any] = {"frames_written": result.frames_written, **asdict(result.stats),
                                      "setup_seconds": round(result.setup_seconds, 3)}
        else:
            swapper.swap_image(target, output=output)
            report = {"frames_written": 1}
        report["options"] = {name: _plain(value) for name, value in swapper.config.options().items()
                             if name in CLIENT_OPTIONS}  # not the server's own paths
        return {**report, "output": relative, "output_bytes": output.stat().st_size}

    def _reference_image(self, job: Job, target: Path, frame: int) -> str:
        """The picture the reference face is taken from: the target image, or the chosen frame of a video."""
        if target.suffix in (".jpg", ".png", ".webp", ".bmp"):
            return str(target)
        path = self.store.scratch_dir / f"{job.id}-reference.png"
        Image.fromarray(read_frame(target, frame)).save(path)
        return str(path)

    def _progress(self, job_id: str) -> Callable[[int, int | None], None]:
        last = [0.0]

        def report(done: int, total: int | None) -> None:
            now = time.monotonic()
            if now - last[0] < PROGRESS_EVERY_S and (total is None or done < total):
                return
            last[0] = now
            if self.store.progress(job_id, self.name, done, total):
                raise JobCancelled()

        return report

    def _preview(self, job: Job, request: dict[str, Any]) -> dict[str, Any]:
        target = Path(self._path(request["target"]))
        rgb = _picture(target, int(request.get("frame", 0)))
        options = dict(request["options"])
        swapper = self._swapper_for([self._path(source) for source in request["sources"]], options)
        reference = request.get("reference")
        reference_rgb = None
        if reference is not None:
            options["reference_face_position"] = int(reference["position"])
            reference_rgb = rgb
            swapper = self._swapper_for([self._path(source) for source in request["sources"]], options)
        swapped = swapper.swap_image(rgb, reference=reference_rgb)
        image = Image.fromarray(swapped)
        image.thumbnail((PREVIEW_PX, PREVIEW_PX), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=90)
        relative = f"scratch/{job.id}.jpg"
        write_bytes_atomic(self.store.data_dir / relative, buffer.getvalue(), durable=False)
        return {"output": relative, "output_bytes": len(buffer.getvalue())}

    def _faces(self, job: Job, request: dict[str, Any]) -> dict[str, Any]:
        target = Path(self._path(request["target"]))
        rgb = _picture(target, int(request.get("frame", 0)))
        # any kept Swapper lists faces; without one, the target serves as its source
        lister = self._kept.current or self._swapper_for([str(target)], {})
        faces = [{"index": index, "box": [round(value, 1) for value in face.box], "score": round(face.score, 3),
                  "thumbnail": _data_url(face.thumbnail)} for index, face in enumerate(lister.faces(rgb))]
        relative = f"scratch/{job.id}.json"
        data = json.dumps({"faces": faces, "width": rgb.shape[1], "height": rgb.shape[0]}).encode()
        write_bytes_atomic(self.store.data_dir / relative, data, durable=False)
        return {"faces": len(faces), "output": relative, "output_bytes": len(data)}


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


def read_frame(path: Path, index: int) -> np.ndarray:
    """Frame `index` of a video, RGB (the last one when the video is shorter)."""
    last = None
    with VideoReader(path, start=0) as reader:
        for number, frame in enumerate(reader):
            last = frame.rgb
            if number >= index:
                break
    if last is None:
        raise SlimfuseError(path, "the video holds no frames")
    return last


def _picture(target: Path, frame: int) -> np.ndarray:
    if target.suffix in (".jpg", ".png", ".webp", ".bmp"):
        return read_image(target).rgb
    return read_frame(target, frame)


def _data_url(rgb: np.ndarray) -> str:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _plain(value: object) -> object:
    """A config value as JSON holds it."""
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


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

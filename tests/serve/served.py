"""A real `slimfuse serve` for the tests: a child process on 127.0.0.1 at a free port, with its own data dir,
and an httpx client for it; helpers to upload, follow a job's events and make small inputs."""
from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil
from PIL import Image

from slimfuse.bench.clips import make_clip, pan
from slimfuse.samples import sample_path

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0
JOB_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def python_env() -> dict[str, str]:
    """This checkout first on the path, also in the server's workers."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    base: str
    data_dir: Path
    token: str | None = None

    def client(self, token: str | None = None, timeout: float = 60.0) -> httpx.Client:
        chosen = token if token is not None else self.token
        headers = {"Authorization": f"Bearer {chosen}"} if chosen else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=timeout)

    def workers(self) -> list[psutil.Process]:
        return [child for child in psutil.Process(self.process.pid).children()
                if "slimfuse.serve.worker" in " ".join(child.cmdline())]

    def tree_rss(self) -> int:
        parent = psutil.Process(self.process.pid)
        total = 0
        for process in [parent, *parent.children(recursive=True)]:
            try:
                total += process.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the server (SIGKILL: the server and its workers die at once, as in a crash)."""
        if self.process.poll() is not None:
            return
        if sig == signal.SIGKILL:
            for worker in self.workers():
                worker.kill()
        self.process.send_signal(sig)
        self.process.wait(30)


def wait_until_up(process: subprocess.Popen[bytes], base: str, workers: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"slimfuse serve exited with {process.returncode}")
        try:
            health = httpx.get(f"{base}/v1/health", timeout=2).json()
            if health["workers"] >= workers:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)  # the server is starting: nothing to await but its port
    raise RuntimeError("slimfuse serve did not start")


@contextmanager
def serving(data_dir: Path, *options: str, workers: int = 1, token: str | None = None) -> Iterator[Server]:
    port = free_port()
    command = [sys.executable, "-m", "slimfuse", "serve", "--port", str(port), "--data-dir", str(data_dir),
               "--workers", str(workers), "--lease-seconds", "2", *options]
    process = subprocess.Popen(command, env=python_env(), stdin=subprocess.DEVNULL)
    server = Server(process, f"http://127.0.0.1:{port}", data_dir, token)
    try:
        wait_until_up(process, server.base, workers)
        yield server
    finally:
        server.stop()


def create_token(data_dir: Path, name: str) -> str:
    done = subprocess.run([sys.executable, "-m", "slimfuse", "serve", "token", "create", name, "--data-dir",
                           str(data_dir)], env=python_env(), capture_output=True, text=True, check=True)
    return done.stdout.strip()


def upload(client: httpx.Client, path: Path, name: str | None = None) -> dict[str, Any]:
    response = client.post("/v1/assets", params={"name": name or path.name}, content=path.read_bytes())
    assert response.status_code == 201, response.text
    return response.json()


def submit(client: httpx.Client, sources: list[str], target: str, **options: object) -> dict[str, Any]:
    response = client.post("/v1/jobs", json={"sources": sources, "target": target, "options": options})
    assert response.status_code == 202, response.text
    return response.json()


def events(client: httpx.Client, job_id: str) -> Iterator[dict[str, Any]]:
    """The job's progress events until it ends (the server closes the stream then)."""
    with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=JOB_TIMEOUT_S) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                yield json.loads(line[6:])


def finish(client: httpx.Client, job_id: str) -> dict[str, Any]:
    seen = list(events(client, job_id))
    return seen[-1]


def samples() -> tuple[Path, Path]:
    return sample_path("astronaut"), sample_path("grace_hopper")


def small_clip(path: Path, frames: int = 24, size: tuple[int, int] = (320, 240)) -> Path:
    photo = np.asarray(Image.open(sample_path("grace_hopper")).convert("RGB"))
    return make_clip(path, pan(photo, size=size, count=frames, face_px=90))


def png_bytes(rgb: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "PNG")
    return buffer.getvalue()

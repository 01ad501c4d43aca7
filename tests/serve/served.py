"""A real `slimfuse serve` for the tests (slimfuse.bench.serve starts it: 127.0.0.1, a free port, its own data dir),
and an httpx client for it; helpers to upload, follow a job's events and make small inputs."""
from __future__ import annotations

import io
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil
import pytest
from PIL import Image

import neural_models as nm
from slimfuse.bench.clips import make_clip, pan
from slimfuse.bench.serve import child_env, follow, running_server, tree_rss
from slimfuse.models.store import Store
from voices import buzz, write_sound, write_still_clip
from slimfuse.samples import sample_path

JOB_TIMEOUT_S = 120.0
SYLLABLES = ((0.3, 0.75, 1.0), (1.1, 1.35, 0.8), (1.62, 2.1, 1.0))
TALK_S = 2.4
"""A lip sync job's clip: 25 frames/s for TALK_S, its voice VOICE_S long with SYLLABLES."""
TALK_TIMES = [round(index * 0.04, 3) for index in range(60)]
VOICE_S = TALK_S + 0.3


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
        return tree_rss(self.process.pid)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the server (SIGKILL: the server and its workers die at once, as in a crash)."""
        if self.process.poll() is not None:
            return
        if sig == signal.SIGKILL:
            for worker in self.workers():
                worker.kill()
        self.process.send_signal(sig)
        self.process.wait(30)


@contextmanager
def serving(data_dir: Path, *options: str, workers: int = 1, token: str | None = None) -> Iterator[Server]:
    with running_server(data_dir, "--lease-seconds", "2", *options, workers=workers) as (process, base):
        server = Server(process, base, data_dir, token)
        try:
            yield server
        finally:
            server.stop()


@contextmanager
def serving_lip_syncer(root: Path, store: Store, user: str | None = None) -> Iterator[Server]:
    """A server (data dir ROOT/data) whose --models-dir holds the mouth stand-in as wav2lip_gan_96, its models' home
    an isolated store; with `user`, the server has tokens and the client is that user's."""
    placed = root / "placed"
    nm.save(nm.mouth_lip_syncer(), placed, "wav2lip_gan_96")
    with pytest.MonkeyPatch.context() as patch:
        nm.isolated_store(root / "home", store)
        patch.setenv("SLIMFUSE_HOME", str(root / "home"))
        token = None if user is None else create_token(root / "data", user)
        with serving(root / "data", "--models-dir", str(placed), token=token) as running:
            yield running


def create_token(data_dir: Path, name: str) -> str:
    done = subprocess.run([sys.executable, "-m", "slimfuse", "serve", "token", "create", name, "--data-dir",
                           str(data_dir)], env=child_env(), capture_output=True, text=True, check=True)
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
    return follow(client, job_id, JOB_TIMEOUT_S)


def finish(client: httpx.Client, job_id: str) -> dict[str, Any]:
    seen = list(events(client, job_id))
    return seen[-1]


def samples() -> tuple[Path, Path]:
    return sample_path("astronaut"), sample_path("grace_hopper")


def small_clip(path: Path, frames: int = 24, size: tuple[int, int] = (320, 240)) -> Path:
    photo = np.asarray(Image.open(sample_path("grace_hopper")).convert("RGB"))
    return make_clip(path, pan(photo, size=size, count=frames, face_px=90))


def lip_sync_inputs(folder: Path, picture: np.ndarray) -> dict[str, Path]:
    """A silent clip of `picture` (`clip`), a generated voice (`voice`, a .wav) and the clip with that voice as its
    sound (`talking`)."""
    voice = buzz(VOICE_S, SYLLABLES)
    return {"clip": write_still_clip(folder / "silent.mkv", picture, TALK_TIMES),
            "voice": write_sound(folder / "voice.wav", voice),
            "talking": write_still_clip(folder / "talking.mkv", picture, TALK_TIMES, voice)}


def png_bytes(rgb: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "PNG")
    return buffer.getvalue()

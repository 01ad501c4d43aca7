"""Nothing accepted is lost: a worker killed mid-job, a server killed and restarted, a video cancelled midway."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import av
import httpx
from served import Server, child_env, events, finish, samples, serving, small_clip, submit, upload

from slimfuse.serve.store import JobStore

CLIP_FRAMES = 60


def _assert_whole_output(server: Server, client: httpx.Client, job_id: str, folder: Path) -> None:
    """The job's output holds every frame of the clip, and no temporary file is left beside it."""
    output = folder / "out.mp4"
    output.write_bytes(client.get(f"/v1/jobs/{job_id}/output").content)
    with av.open(str(output)) as container:
        assert sum(1 for _ in container.decode(video=0)) == CLIP_FRAMES
    assert not [path for path in (server.data_dir / "outputs").iterdir() if path.name.endswith(".part")]


def _wait_running(client: httpx.Client, job_id: str) -> dict[str, Any]:
    for event in events(client, job_id):
        if event["state"] == "running" and event["done"] > 0:
            return event
    raise AssertionError("the job ended before it was seen running")


@contextmanager
def _video_job_running(tmp_path: Path) -> Iterator[tuple[Server, httpx.Client, dict[str, Any], dict[str, Any]]]:
    """A one-worker server with a video job seen running: (server, client, job, its last event)."""
    clip = small_clip(tmp_path / "clip.mp4", frames=CLIP_FRAMES)
    with serving(tmp_path / "data") as server, server.client() as client:
        source, target = upload(client, samples()[0])["id"], upload(client, clip)["id"]
        job = submit(client, [source], target)
        yield server, client, job, _wait_running(client, job["id"])


def test_worker_killed_mid_job_is_requeued_and_completes(tmp_path: Path) -> None:
    with _video_job_running(tmp_path) as (server, client, job, _):
        (worker,) = server.workers()
        worker.send_signal(signal.SIGKILL)
        ended = finish(client, job["id"])
        assert ended["state"] == "succeeded" and ended["attempts"] == 2
        _assert_whole_output(server, client, job["id"], tmp_path)


def test_cancel_mid_video_leaves_no_output(tmp_path: Path) -> None:
    with _video_job_running(tmp_path) as (server, client, job, running):
        assert running["done"] < CLIP_FRAMES
        client.post(f"/v1/jobs/{job['id']}/cancel")
        ended = finish(client, job["id"])
        assert ended["state"] == "cancelled" and not ended["output"]
        assert client.get(f"/v1/jobs/{job['id']}/output").status_code == 409
        assert list((server.data_dir / "outputs").iterdir()) == []


def test_restarted_server_finds_every_job(tmp_path: Path) -> None:
    data = tmp_path / "data"
    clip = small_clip(tmp_path / "clip.mp4", frames=CLIP_FRAMES)
    with serving(data) as server, server.client() as client:
        astronaut, grace_hopper = samples()
        source, image, video = (upload(client, path)["id"] for path in (astronaut, grace_hopper, clip))
        first = submit(client, [source], image)
        assert finish(client, first["id"])["state"] == "succeeded"
        running = submit(client, [source], video)
        queued = [submit(client, [source], image) for _ in range(2)]
        _wait_running(client, running["id"])
        server.stop(signal.SIGKILL)  # a crash: the server and its worker die at once
    with serving(data) as server, server.client() as client:
        listed = {job["id"]: job for job in client.get("/v1/jobs").json()["jobs"]}
        assert set(listed) == {first["id"], running["id"], *(job["id"] for job in queued)}
        assert listed[first["id"]]["state"] == "succeeded"
        for job in [running, *queued]:
            assert finish(client, job["id"])["state"] == "succeeded"
        _assert_whole_output(server, client, running["id"], tmp_path)


def test_sigterm_stops_the_server_and_puts_the_running_job_back(tmp_path: Path) -> None:
    with _video_job_running(tmp_path) as (server, _, job, _):
        server.stop(signal.SIGTERM)
        assert server.process.returncode == 0
    stored = JobStore(tmp_path / "data").job(job["id"])
    assert stored is not None and stored.state == "queued" and stored.row["output"] is None
    assert list((tmp_path / "data" / "outputs").iterdir()) == []


def test_a_killed_servers_worker_finishes_its_job_and_a_restarted_server_stops_the_others(tmp_path: Path) -> None:
    """kill -9 of the server alone: its worker takes no new job, finishes the running one (no frame thrown away:
    one attempt) and stops; the restarted server leaves that job to it, runs its own --workers and stops a worker
    of the data dir that no server runs."""
    data = tmp_path / "data"
    clip = small_clip(tmp_path / "clip.mp4", frames=CLIP_FRAMES)
    with serving(data) as server, server.client() as client:
        source, video, image = (upload(client, path)["id"] for path in (samples()[0], clip, samples()[1]))
        running = submit(client, [source], video)
        _wait_running(client, running["id"])
        (orphan,) = server.workers()
        server.process.kill()  # the server alone, as `kill -9` does
        server.process.wait(30)
    stray = subprocess.Popen([sys.executable, "-m", "slimfuse.serve.worker", "--data-dir", str(data), "--name",
                              "stray", "--lease-seconds", "2"], env=child_env())  # idle, of no server
    _wait_registered(data, "stray")
    with serving(data) as server, server.client() as client:
        assert stray.wait(30) is not None  # stopped by the restarted server
        assert len(server.workers()) == 1 and client.get("/v1/health").json()["workers"] == 1
        queued = submit(client, [source], image)
        ended = finish(client, running["id"])
        assert ended["state"] == "succeeded" and ended["attempts"] == 1  # finished by the orphan, never restarted
        _assert_whole_output(server, client, running["id"], tmp_path)
        orphan.wait(30)  # it stops after its job (psutil.TimeoutExpired if it does not)
        assert not orphan.is_running()
        assert finish(client, queued["id"])["state"] == "succeeded"
        assert JobStore(data).job(queued["id"]).row["worker"] != "stray"


def _wait_registered(data: Path, name: str) -> None:
    store = JobStore(data)
    deadline = time.monotonic() + 60
    while name not in {worker["name"] for worker in store.workers()}:
        assert time.monotonic() < deadline, f"worker {name} never started"
        time.sleep(0.1)

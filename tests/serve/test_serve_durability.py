"""Nothing accepted is lost: a worker killed mid-job, a server killed and restarted, a video cancelled midway."""
from __future__ import annotations

import signal
from pathlib import Path

import av
from served import events, finish, samples, serving, small_clip, submit, upload

from slimfuse.serve.store import JobStore

CLIP_FRAMES = 60


def _frames(path: Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def _leftovers(data_dir: Path) -> list[Path]:
    return [path for path in (data_dir / "outputs").iterdir() if path.name.endswith(".part")]


def _wait_running(client, job_id: str) -> dict:  # noqa: ANN001
    for event in events(client, job_id):
        if event["state"] == "running" and event["done"] > 0:
            return event
    raise AssertionError("the job ended before it was seen running")


def test_worker_killed_mid_job_is_requeued_and_completes(tmp_path: Path) -> None:
    clip = small_clip(tmp_path / "clip.mp4", frames=CLIP_FRAMES)
    with serving(tmp_path / "data") as server, server.client() as client:
        source, target = upload(client, samples()[0])["id"], upload(client, clip)["id"]
        job = submit(client, [source], target)
        _wait_running(client, job["id"])
        (worker,) = server.workers()
        worker.send_signal(signal.SIGKILL)
        ended = finish(client, job["id"])
        assert ended["state"] == "succeeded" and ended["attempts"] == 2
        output = tmp_path / "out.mp4"
        output.write_bytes(client.get(f"/v1/jobs/{job['id']}/output").content)
        assert _frames(output) == CLIP_FRAMES
        assert not _leftovers(server.data_dir)


def test_cancel_mid_video_leaves_no_output(tmp_path: Path) -> None:
    clip = small_clip(tmp_path / "clip.mp4", frames=CLIP_FRAMES)
    with serving(tmp_path / "data") as server, server.client() as client:
        source, target = upload(client, samples()[0])["id"], upload(client, clip)["id"]
        job = submit(client, [source], target)
        running = _wait_running(client, job["id"])
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
        output = tmp_path / "out.mp4"
        output.write_bytes(client.get(f"/v1/jobs/{running['id']}/output").content)
        assert _frames(output) == CLIP_FRAMES
        assert not _leftovers(server.data_dir)


def test_sigterm_stops_the_server_and_puts_the_running_job_back(tmp_path: Path) -> None:
    clip = small_clip(tmp_path / "clip.mp4", frames=CLIP_FRAMES)
    with serving(tmp_path / "data") as server, server.client() as client:
        source, target = upload(client, samples()[0])["id"], upload(client, clip)["id"]
        job = submit(client, [source], target)
        _wait_running(client, job["id"])
        server.stop(signal.SIGTERM)
        assert server.process.returncode == 0
    stored = JobStore(tmp_path / "data").job(job["id"])
    assert stored is not None and stored.state == "queued" and stored.row["output"] is None
    assert list((tmp_path / "data" / "outputs").iterdir()) == []

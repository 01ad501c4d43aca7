"""Load, bounded and on loopback: 8 users submitting image jobs at once and 2 submitting videos, through a server
with a memory budget: no job lost or run twice, every output valid, the tree of processes within the budget."""
from __future__ import annotations

import io
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import av
import numpy as np
from PIL import Image
from served import Server, finish, samples, serving, small_clip, submit, upload

from slimfuse.serve.store import JobStore
from slimfuse.serve.tokens import create_token

BUDGET_MB = 1000
IMAGE_USERS, VIDEO_USERS, IMAGES_EACH, CLIP_FRAMES = 8, 2, 3, 30
RSS_EVERY_S = 0.05


def _image_user(server: Server, token: str) -> list[dict]:
    astronaut, grace_hopper = samples()
    with server.client(token=token) as client:
        source, target = upload(client, astronaut)["id"], upload(client, grace_hopper)["id"]
        jobs = [submit(client, [source], target) for _ in range(IMAGES_EACH)]
        ended = [finish(client, job["id"]) for job in jobs]
        for job in ended:
            output = np.asarray(Image.open(io.BytesIO(client.get(f"/v1/jobs/{job['id']}/output").content)))
            assert output.shape == (600, 512, 3)
        return ended


def _video_user(server: Server, token: str, clip: Path) -> list[dict]:
    with server.client(token=token) as client:
        source, target = upload(client, samples()[0])["id"], upload(client, clip)["id"]
        ended = finish(client, submit(client, [source], target)["id"])
        with av.open(io.BytesIO(client.get(f"/v1/jobs/{ended['id']}/output").content)) as container:
            assert sum(1 for _ in container.decode(video=0)) == CLIP_FRAMES
        return [ended]


def test_ten_users_at_once_within_the_budget(tmp_path: Path) -> None:
    data = tmp_path / "data"
    tokens = [create_token(JobStore(data), f"user{index}") for index in range(IMAGE_USERS + VIDEO_USERS)]
    clip = small_clip(tmp_path / "clip.mp4", frames=CLIP_FRAMES)
    with serving(data, "--memory-budget", str(BUDGET_MB), workers=2, token=tokens[0]) as server:
        peak = [0]
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(RSS_EVERY_S):
                peak[0] = max(peak[0], server.tree_rss())

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            with ThreadPoolExecutor(IMAGE_USERS + VIDEO_USERS) as users:
                runs = [users.submit(_image_user, server, token) for token in tokens[:IMAGE_USERS]]
                runs += [users.submit(_video_user, server, token, clip) for token in tokens[IMAGE_USERS:]]
                ended = [job for run in runs for job in run.result()]
        finally:
            stop.set()
            watcher.join()
    assert len(ended) == IMAGE_USERS * IMAGES_EACH + VIDEO_USERS
    assert all(job["state"] == "succeeded" and job["attempts"] == 1 for job in ended)
    with JobStore(data).connect() as db:
        rows = db.execute("SELECT id, output, planned_bytes, started, finished FROM jobs WHERE kind = 'swap'").fetchall()
    assert {row["id"] for row in rows} == {job["id"] for job in ended}
    assert len({row["output"] for row in rows}) == len(rows)
    for row in rows:  # at every start, the jobs running then fit the budget together
        running = [other for other in rows if other["started"] <= row["started"] < other["finished"]]
        assert sum(other["planned_bytes"] for other in running) <= BUDGET_MB << 20
    assert 0 < peak[0] <= BUDGET_MB << 20, f"peak {peak[0] >> 20} MB"
    print(f"peak RSS of the server's tree: {peak[0] >> 20} MB")


def test_jobs_wait_for_room_and_one_that_never_fits_is_refused(tmp_path: Path) -> None:
    with serving(tmp_path / "tight", "--memory-budget", "350", workers=2) as server, server.client() as client:
        astronaut, grace_hopper = samples()
        source, target = upload(client, astronaut)["id"], upload(client, grace_hopper)["id"]
        jobs = [submit(client, [source], target) for _ in range(4)]
        assert all(finish(client, job["id"])["state"] == "succeeded" for job in jobs)
        with JobStore(server.data_dir).connect() as db:
            rows = db.execute("SELECT planned_bytes, started, finished FROM jobs WHERE kind = 'swap' "
                              "ORDER BY started").fetchall()
        assert 175 << 20 < rows[0]["planned_bytes"] <= 350 << 20  # two do not fit at once: they took turns
        assert all(later["started"] >= earlier["finished"] for earlier, later in zip(rows, rows[1:], strict=False))
    with serving(tmp_path / "tiny", "--memory-budget", "100") as server, server.client() as client:
        source, target = upload(client, astronaut)["id"], upload(client, grace_hopper)["id"]
        refused = client.post("/v1/jobs", json={"sources": [source], "target": target})
        assert refused.status_code == 422
        body = refused.json()
        assert body["error"] == "MemoryBudgetError" and body["exit_code"] == 41
        assert "--memory-budget 100 MB is too small for this job: it needs at least" in body["message"]
        assert client.get("/v1/jobs").json()["jobs"] == []

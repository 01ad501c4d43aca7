"""`slimfuse serve --ray ADDRESS` on a two-node Ray cluster on this machine (ray.cluster_utils.Cluster: a head that
runs no actor and two nodes of one CPU each, on loopback, token auth off): jobs run on the actors with their files
through the object store, the store on the API node stays the record, and a node removed mid-video has its job run
again on the other node, to a whole output."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import av
import pytest
from served import Server, finish, samples, serving, small_clip, submit, upload

from slimfuse.serve.store import JobStore

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402 - only with the extra

from slimfuse.bench.serve_load import two_node_cluster  # noqa: E402

CLIP_FRAMES = 90
WAIT_S = 180.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with two_node_cluster() as running:
        yield running


def _node_of(server: Server, job_id: str) -> str:
    """The node (id prefix) of the actor running job `job_id`, once it runs."""
    store = JobStore(server.data_dir)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        job = store.job(job_id)
        assert job is not None
        if job.state == "running" and job.row["done"] > 0:
            return str(job.row["worker"]).split("@")[1]
        time.sleep(0.1)
    raise AssertionError("the job never ran")


def test_jobs_run_on_the_clusters_actors_and_a_lost_node_reruns_its_job(tmp_path: Path, cluster: Cluster) -> None:
    running = cluster
    nodes = [node for node in running.list_all_nodes() if node is not running.head_node]
    clip = small_clip(tmp_path / "clip.mp4", frames=CLIP_FRAMES)
    with serving(tmp_path / "data", "--ray", running.address, workers=2) as server, server.client() as client:
        assert client.get("/v1/health").json()["workers"] == 2
        source, image = (upload(client, path)["id"] for path in samples())
        photo = finish(client, submit(client, [source], image)["id"])
        assert photo["state"] == "succeeded" and photo["attempts"] == 1
        assert len(client.get(f"/v1/jobs/{photo['id']}/output").content) > 10_000  # sent back into the data dir
        video = submit(client, [source], upload(client, clip)["id"])
        node = _node_of(server, video["id"])
        running.remove_node(next(each for each in nodes if each.node_id.startswith(node)))  # a node lost
        ended = finish(client, video["id"])
        assert ended["state"] == "succeeded" and ended["attempts"] == 2, ended
        assert not str(JobStore(server.data_dir).job(video["id"]).row["worker"]).endswith(node)  # the other node
        output = tmp_path / "out.mp4"
        output.write_bytes(client.get(f"/v1/jobs/{video['id']}/output").content)
        with av.open(str(output)) as container:
            assert sum(1 for _ in container.decode(video=0)) == CLIP_FRAMES  # every frame
        stopped = submit(client, [source], upload(client, clip)["id"])
        _node_of(server, stopped["id"])  # running, its progress copied from the actor into the store
        client.post(f"/v1/jobs/{stopped['id']}/cancel")  # reaches the actor: it stops at its next frame
        ended = finish(client, stopped["id"])
        assert ended["state"] == "cancelled" and 0 < ended["done"] < CLIP_FRAMES and not ended["output"]

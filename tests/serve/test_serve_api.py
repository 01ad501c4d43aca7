"""The /v1 API against a real server on loopback: every endpoint, and bad input of every kind."""
from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image
from provenance_readers import xmp_of
from served import Server, events, finish, png_bytes, samples, serving, small_clip, submit, upload
from slimfuse.samples import sample_path

from slimfuse.config import RunConfig
from slimfuse.errors import UsageError


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("serve"), "--max-upload-mb", "1", workers=2) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        yield opened


@pytest.fixture(scope="module")
def assets(client: httpx.Client) -> dict[str, str]:
    astronaut, grace_hopper = samples()
    return {"astronaut": upload(client, astronaut)["id"], "grace_hopper": upload(client, grace_hopper)["id"]}


def test_health_docs_and_page(client: httpx.Client) -> None:
    health = client.get("/v1/health").json()
    assert health["status"] == "ok" and health["workers"] == 2
    docs = client.get("/docs")
    assert docs.status_code == 200 and "cdn." not in docs.text and "https://" not in docs.text  # offline
    for asset in ("/docs-static/swagger-ui-bundle.js", "/docs-static/swagger-ui.css"):
        assert asset in docs.text and client.get(asset).status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/assets", "/v1/jobs", "/v1/jobs/{job_id}/events", "/v1/jobs/{job_id}/output", "/v1/preview",
                 "/v1/faces", "/v1/options", "/v1/models", "/v1/health"):
        assert path in paths
    page = client.get("/")
    assert page.status_code == 200 and "<title>slimfuse</title>" in page.text
    assert client.get("/static/app.js").status_code == 200


def test_models_listed_with_their_state(client: httpx.Client) -> None:
    models = {model["name"]: model for model in client.get("/v1/models").json()["models"]}
    assert models["mesh"]["state"] == "embedded"
    assert models["face_landmark"]["state"] == "present"
    assert {model["state"] for model in models.values()} <= {"embedded", "present", "missing"}


def test_image_job_from_upload_to_download(server: Server, client: httpx.Client, assets: dict[str, str],
                                           tmp_path: Path) -> None:
    response = client.post("/v1/jobs", json={"sources": [assets["astronaut"]], "target": assets["grace_hopper"],
                                             "options": {"output_image_quality": 90}})
    assert response.status_code == 202
    job = response.json()
    assert response.headers["location"] == f"/v1/jobs/{job['id']}"
    assert job["state"] in ("queued", "running") and job["options"]["output_image_quality"] == 90
    assert job["media"] == "image"
    seen = list(events(client, job["id"]))
    assert seen[-1]["state"] == "succeeded" and seen[-1]["progress"] == 1.0
    done = client.get(f"/v1/jobs/{job['id']}").json()
    assert done["report"]["options"]["output_image_quality"] == 90 and done["started"] <= done["finished"]
    download = client.get(f"/v1/jobs/{job['id']}/output")
    assert download.status_code == 200
    written = tmp_path / "out.jpg"
    written.write_bytes(download.content)
    output = np.asarray(Image.open(written).convert("RGB"))
    target = np.asarray(Image.open(samples()[1]).convert("RGB"))
    assert output.shape == target.shape
    assert np.abs(output.astype(int) - target).mean() > 0.5  # a face was swapped in
    assert "compositeSynthetic" in str(xmp_of(written))
    assert job["id"] in [listed["id"] for listed in client.get("/v1/jobs").json()["jobs"]]


def test_upload_keeps_no_client_name_as_a_path(server: Server, client: httpx.Client) -> None:
    astronaut, _ = samples()
    asset = upload(client, astronaut, name="../../../etc/evil name?.png")
    assert asset["name"] == "evil name_.png" and len(asset["id"]) == 20
    stored = list((server.data_dir / "assets").iterdir())
    assert server.data_dir / "assets" / f"{asset['id']}.png" in stored
    assert not any("evil" in path.name for path in server.data_dir.rglob("*"))
    assert client.get(f"/v1/assets/{asset['id']}").json()["kind"] == "image"


def _refused(response: httpx.Response, status: int, error: str, exit_code: int | None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error and body["exit_code"] == exit_code
    assert "\n" not in body["message"] and "Traceback" not in body["message"]
    return str(body["message"])


def test_bad_uploads_are_refused(server: Server, client: httpx.Client, tmp_path: Path) -> None:
    _, grace_hopper = samples()
    data = grace_hopper.read_bytes()
    big = np.random.default_rng(0).integers(0, 255, (800, 800, 3), dtype=np.uint8)
    oversized = png_bytes(big)  # over --max-upload-mb 1
    assert "--max-upload-mb" in _refused(client.post("/v1/assets", content=oversized), 413, "UploadTooLarge", None)
    chunks = (oversized[i:i + 65536] for i in range(0, len(oversized), 65536))  # no Content-Length: capped as read
    _refused(client.post("/v1/assets", content=chunks), 413, "UploadTooLarge", None)
    text = b"this is not an image at all, whatever its name says\n" * 20
    assert "photo.jpg" in _refused(client.post("/v1/assets", params={"name": "photo.jpg"}, content=text), 415,
                                   "UnsupportedTypeError", 7)
    _refused(client.post("/v1/assets", params={"name": "cut.jpg"}, content=data[: len(data) // 2]), 422,
             "InputCorruptError", 6)
    _refused(client.post("/v1/assets", content=b""), 422, "InputEmptyError", 5)
    bomb = io.BytesIO()
    Image.new("1", (12000, 12000)).save(bomb, "PNG")  # 144 megapixels in a few kB
    assert len(bomb.getvalue()) < 100_000
    assert "megapixels" in _refused(client.post("/v1/assets", content=bomb.getvalue()), 413, "ImageTooLargeError", 16)
    assert not [path for path in (server.data_dir / "assets").iterdir() if path.name.endswith(".part")]


def test_bad_jobs_get_the_command_lines_errors(client: httpx.Client, assets: dict[str, str]) -> None:
    body = {"sources": [assets["astronaut"]], "target": assets["grace_hopper"]}
    message = _refused(client.post("/v1/jobs", json={**body, "options": {"blend": "smudge"}}), 422, "UsageError", 2)
    with pytest.raises(UsageError) as expected:
        RunConfig.from_options([], blend="smudge")
    assert message == expected.value.message
    assert "reference_face_image" in _refused(client.post("/v1/jobs", json={
        **body, "options": {"reference_face_image": "/etc/passwd"}}), 422, "UsageError", 2)
    assert "at least" in _refused(client.post("/v1/jobs", json={**body, "options": {"memory_budget": 5}}), 422,
                                  "MemoryBudgetError", 41)
    _refused(client.post("/v1/jobs", json={**body, "target": "0" * 20}), 404, "NotFound", None)
    assert _refused(client.post("/v1/jobs", json={"target": assets["grace_hopper"]}), 422, "UsageError", 2) == \
        "give a source photo: face_swapper puts its face in"
    _refused(client.get("/v1/jobs/nosuchjob"), 404, "NotFound", None)


def test_a_job_without_the_face_swapper_needs_no_source(client: httpx.Client, assets: dict[str, str]) -> None:
    job = submit(client, [], assets["grace_hopper"], processors=["face_debugger"])
    ended = finish(client, job["id"])
    assert ended["state"] == "succeeded", ended
    drawn = np.asarray(Image.open(io.BytesIO(client.get(f"/v1/jobs/{job['id']}/output").content)).convert("RGB"))
    target = np.asarray(Image.open(sample_path("grace_hopper")).convert("RGB"))
    changed = np.abs(drawn.astype(int) - target).max(axis=2) > 40  # past the JPEG's re-encoding
    assert 0.0005 < changed.mean() < 0.05  # the face's points and tag drawn on, nothing swapped


def test_a_target_without_a_face_fails_with_its_exit_code(server: Server, client: httpx.Client,
                                                          assets: dict[str, str]) -> None:
    blank = client.post("/v1/assets", params={"name": "wall.png"},
                        content=png_bytes(np.full((96, 128, 3), 120, np.uint8))).json()
    job = submit(client, [assets["astronaut"]], blank["id"])
    ended = finish(client, job["id"])
    assert ended["state"] == "failed" and ended["error"] == "NoTargetFaceError" and ended["exit_code"] == 9
    assert ended["message"].startswith("wall.png: no face") and not ended["output"]  # the name the user gave it
    assert str(server.data_dir) not in ended["message"] and "/" not in ended["message"]
    sourceless = submit(client, [blank["id"]], assets["grace_hopper"])  # the same photo as a source
    message = finish(client, sourceless["id"])["message"]
    assert message == "wall.png: no face found in the source image"
    _refused(client.get(f"/v1/jobs/{job['id']}/output"), 409, "NotReady", None)


def test_preview_follows_the_options(server: Server, client: httpx.Client, assets: dict[str, str]) -> None:
    body = {"sources": [assets["astronaut"]], "target": assets["grace_hopper"]}
    first = client.post("/v1/preview", json=body)
    assert first.status_code == 200 and first.headers["content-type"] == "image/jpeg"
    again = client.post("/v1/preview", json={**body, "options": {"blend": "feather"}})
    changed = client.post("/v1/preview", json={**body, "options": {"target_face_size": 64}})
    face = (slice(130, 340), slice(165, 370))  # Grace Hopper's face
    decoded = [np.asarray(Image.open(io.BytesIO(reply.content)).convert("RGB")).astype(int)[face]
               for reply in (first, again, changed)]
    assert np.abs(decoded[0] - decoded[1]).mean() < 0.1
    assert np.abs(decoded[0] - decoded[2]).mean() > 1.0
    _refused(client.post("/v1/preview", json={**body, "options": {"target_face_size": -1}}), 422, "UsageError", 2)
    deadline = time.monotonic() + 10  # a preview is read once: its file goes once it is answered
    while list((server.data_dir / "scratch").glob("*.jpg")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not list((server.data_dir / "scratch").glob("*.jpg"))


def test_faces_of_an_image_and_of_a_video_frame(client: httpx.Client, assets: dict[str, str],
                                                tmp_path: Path) -> None:
    listed = client.post("/v1/faces", json={"target": assets["grace_hopper"]}).json()
    assert len(listed["faces"]) == 1 and listed["width"] == 512
    face = listed["faces"][0]
    x0, y0, x1, y1 = face["box"]
    assert 150 < x0 < x1 < 390 and 110 < y0 < y1 < 360
    assert face["thumbnail"].startswith("data:image/png;base64,")
    clip = upload(client, small_clip(tmp_path / "clip.mp4", frames=8))
    assert clip["kind"] == "video" and clip["frames"] == 8
    frame = client.post("/v1/faces", json={"target": clip["id"], "frame": 5}).json()
    assert len(frame["faces"]) == 1 and frame["width"] == 320
    job = client.post("/v1/jobs", json={"sources": [assets["astronaut"]], "target": clip["id"],
                                        "reference": {"position": 0, "frame": 5}})
    ended = finish(client, job.json()["id"])
    assert ended["state"] == "succeeded" and ended["report"]["options"]["face_selector_mode"] == "reference"
    assert ended["report"]["faces_swapped"] >= 7


def test_cancel_a_queued_job(client: httpx.Client, assets: dict[str, str]) -> None:
    jobs = [submit(client, [assets["astronaut"]], assets["grace_hopper"]) for _ in range(4)]
    cancelled = client.post(f"/v1/jobs/{jobs[-1]['id']}/cancel").json()
    ends = [finish(client, job["id"]) for job in jobs]
    assert cancelled["state"] in ("cancelled", "running")
    assert ends[-1]["state"] == "cancelled" or ends[-1]["state"] == "succeeded" and cancelled["state"] == "running"
    assert all(end["state"] == "succeeded" for end in ends[:-1])
    retried = client.post(f"/v1/jobs/{jobs[-1]['id']}/retry")
    assert retried.status_code == 202 and finish(client, retried.json()["id"])["state"] == "succeeded"

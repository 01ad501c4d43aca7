"""Users: bearer tokens, each user's own assets and jobs, per-user limits, and the loopback-only open mode."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from served import create_token, finish, child_env, samples, serving, submit, upload

from slimfuse.serve.live_socket import _checked_control
from slimfuse.serve.store import JobStore
from slimfuse.serve.uploads import receive


def test_tokens_separate_users(tmp_path: Path) -> None:
    data = tmp_path / "data"
    alice, bob = create_token(data, "alice"), create_token(data, "bob")
    assert alice.startswith("sf_") and alice != bob
    assert alice not in (data / "slimfuse.db").read_bytes().decode("latin-1")  # stored hashed
    again = subprocess.run([sys.executable, "-m", "slimfuse", "serve", "token", "create", "alice", "--data-dir",
                            str(data)], env=child_env(), capture_output=True, text=True)
    assert again.returncode == 2 and "exists already" in again.stderr
    astronaut, grace_hopper = samples()
    with serving(data, "--max-jobs-per-user", "1", "--max-storage-mb", "1") as server:
        with server.client(token="") as anonymous, server.client(token="sf_wrong") as wrong:
            assert anonymous.get("/v1/health").status_code == 200
            for client, says in ((anonymous, "a valid bearer token is needed"), (wrong, "the token is not valid")):
                refused = client.get("/v1/jobs")
                assert refused.status_code == 401 and refused.json()["error"] == "Unauthorized"
                assert refused.json()["message"].startswith(says)  # a wrong token does not read like a missing one
                assert client.post("/v1/assets", content=astronaut.read_bytes()).status_code == 401
        with server.client(token=alice) as as_alice, server.client(token=bob) as as_bob:
            source, target = upload(as_alice, astronaut)["id"], upload(as_alice, grace_hopper)["id"]
            full = as_alice.post("/v1/assets", content=astronaut.read_bytes())  # 0.85 + 0.75 MB > 1 MB
            assert full.status_code == 507 and full.json()["error"] == "StorageLimitError"
            assert upload(as_bob, astronaut)["kind"] == "image"  # each user has their own storage
            job = submit(as_alice, [source], target)
            limited = as_alice.post("/v1/jobs", json={"sources": [source], "target": target})
            assert limited.status_code == 429 and limited.json()["error"] == "TooManyJobsError"
            for path in (f"/v1/assets/{source}", f"/v1/jobs/{job['id']}", f"/v1/jobs/{job['id']}/output"):
                assert as_bob.get(path).status_code == 404
            assert as_bob.post(f"/v1/jobs/{job['id']}/cancel").status_code == 404
            assert as_bob.delete(f"/v1/jobs/{job['id']}").status_code == 404
            assert as_bob.delete(f"/v1/assets/{source}").status_code == 404
            stolen = as_bob.post("/v1/jobs", json={"sources": [source], "target": target})
            assert stolen.status_code == 404 and stolen.json()["error"] == "NotFound"
            assert as_bob.get("/v1/jobs").json()["jobs"] == []
            assert finish(as_alice, job["id"])["state"] == "succeeded"
            with server.client(token="") as by_cookie:
                # never in a URL (where logs and history keep it); the page keeps it in an HttpOnly cookie
                assert by_cookie.get(f"/v1/jobs/{job['id']}", params={"token": alice}).status_code == 401
                session = by_cookie.post("/v1/session", headers={"Authorization": f"Bearer {alice}"})
                cookie = session.headers["set-cookie"]
                assert session.status_code == 204 and "HttpOnly" in cookie and "SameSite=strict" in cookie
                assert by_cookie.get(f"/v1/jobs/{job['id']}/output").status_code == 200
                assert by_cookie.delete("/v1/session").status_code == 204
                assert by_cookie.get(f"/v1/jobs/{job['id']}/output").status_code == 401


def test_binding_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    refused = subprocess.run([sys.executable, "-m", "slimfuse", "serve", "--host", "0.0.0.0", "--data-dir",
                              str(tmp_path)], env=child_env(), capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "binding beyond loopback needs tokens" in refused.stderr and "Traceback" not in refused.stderr


def test_old_files_expire(tmp_path: Path) -> None:
    from slimfuse.serve.server import sweep

    store = JobStore(tmp_path)
    path = store.assets_dir / "0123456789abcdef0123.png"
    path.write_bytes(b"x")
    store.add_asset({"id": "0123456789abcdef0123", "user": "local", "kind": "image", "suffix": ".png", "name": "a",
                     "bytes": 1, "width": 1, "height": 1, "frames": None, "created": 0.0})
    assert sweep(store, retention_hours=24) == [path]
    assert not path.exists() and store.asset("local", "0123456789abcdef0123") is None


def test_a_live_control_reaches_the_worker_only_with_the_users_own_upload(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    _, grace_hopper = samples()

    async def chunks() -> AsyncIterator[bytes]:
        yield grace_hopper.read_bytes()

    asset = asyncio.run(receive(store, "bob", chunks(), "grace.jpg", 1 << 20))
    asked = json.dumps({"source": asset["id"], "keep_mouth": False})
    assert _checked_control(asked, store, "alice") == ({"keep_mouth": False}, f"no source image {asset['id']}")
    assert _checked_control(asked, store, "bob") == (
        {"keep_mouth": False, "source_path": str(store.asset_path(asset)), "source_name": "grace.jpg"}, None)
    # Only known keys of their types go on: a path from the page never reaches the worker.
    forged = json.dumps({"source_path": "/etc/passwd", "swap": "yes", "selector_mode": "reference", "enhancer": True})
    assert _checked_control(forged, store, "bob") == ({"enhancer": True}, None)
    assert _checked_control("[1]", store, "bob") == (None, "a control is a JSON object")


def test_users_see_and_delete_what_they_stored_and_outputs_count_against_storage(tmp_path: Path) -> None:
    astronaut, _ = samples()
    with serving(tmp_path / "data", "--max-storage-mb", "1") as server, server.client() as client:
        photo = upload(client, astronaut)  # 0.85 MB of the 1 MB
        listed = client.get("/v1/assets").json()
        assert [asset["id"] for asset in listed["assets"]] == [photo["id"]]
        assert listed["storage"] == {"bytes": photo["bytes"], "limit_bytes": 1 << 20}
        job = submit(client, [photo["id"]], photo["id"])
        busy = client.delete(f"/v1/assets/{photo['id']}")
        assert busy.status_code == 409 and busy.json()["error"] == "AssetInUse"  # while its job is queued or running
        ended = finish(client, job["id"])
        assert ended["state"] == "succeeded"
        finished = client.post(f"/v1/jobs/{job['id']}/cancel")
        assert finished.status_code == 409 and finished.json()["error"] == "JobFinished"
        output = server.data_dir / "outputs" / f"{job['id']}.png"
        used = client.get("/v1/assets").json()["storage"]["bytes"]
        assert output.is_file() and used == photo["bytes"] + output.stat().st_size  # the output counts too
        full = client.post("/v1/jobs", json={"sources": [photo["id"]], "target": photo["id"]})
        assert full.status_code == 507 and full.json()["error"] == "StorageLimitError"
        assert client.delete(f"/v1/jobs/{job['id']}").status_code == 204
        assert not output.exists() and client.get(f"/v1/jobs/{job['id']}").status_code == 404
        assert client.get("/v1/assets").json()["storage"]["bytes"] == photo["bytes"]
        assert client.delete(f"/v1/assets/{photo['id']}").status_code == 204
        assert not list((server.data_dir / "assets").iterdir())  # the file, not only the row
        assert client.get(f"/v1/assets/{photo['id']}").status_code == 404
        assert client.delete(f"/v1/assets/{photo['id']}").status_code == 404
        assert client.get("/v1/assets").json() == {"assets": [], "storage": {"bytes": 0, "limit_bytes": 1 << 20}}


def test_the_open_mode_answers_only_its_own_pages_on_loopback(tmp_path: Path) -> None:
    """Without tokens the server trusts whoever reaches it on loopback: a page of another site (its Origin) or a
    name rebound to 127.0.0.1 (its Host) must not reach it through the visitor's browser."""
    astronaut, _ = samples()
    with serving(tmp_path / "data") as server, server.client() as client:
        rebound = client.get("/v1/jobs", headers={"Host": "evil.example"})
        assert rebound.status_code == 403 and rebound.json()["error"] == "Forbidden"
        assert client.get("/", headers={"Host": "evil.example:7860"}).status_code == 403
        cross = client.post("/v1/assets", content=astronaut.read_bytes(),
                            headers={"Origin": "http://evil.example", "Content-Type": "text/plain"})
        assert cross.status_code == 403 and "not accepted" in cross.json()["message"]
        assert client.get("/v1/assets").json()["assets"] == []  # nothing was stored
        own = client.post("/v1/assets", content=astronaut.read_bytes(), headers={"Origin": server.base})
        assert own.status_code == 201
        assert client.get("/v1/health", headers={"Host": "localhost"}).status_code == 200

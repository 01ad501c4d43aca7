"""The live page's socket, `/v1/live?source=ASSET` (the token in the page's cookie or the Authorization header; another
site's page is refused by its Origin): the browser sends its camera's newest frame as a binary message (an 8-byte
stamp of its choice, then a JPEG), waits for the answer (one frame in flight), and gets the swapped frame back with
the same stamp.

The session is planned like a job (the source photo, the client's options, the server's budget) and held in the job
store while it runs, so its planned peak counts against --memory-budget beside the running jobs: one that cannot fit
is refused with the reason. The swap runs in a process of its own (slimfuse.serve.live_worker); this process only
relays, and checks the page's controls (text messages: `{"swap": false}`, `{"selector_mode": "many"}`,
`{"keep_mouth": false}`, `{"enhancer": false}`, `{"face_editor": {"mouth_smile": 0.5}}`, `{"source": ASSET}`)
before they reach the worker: a source is one of this user's own uploaded images (POST /v1/assets, within
--max-upload-mb), another user's is answered like a missing one; the face editor's values are its names, each
within -1..1. The worker's lines (`{"ready": ...}`, `{"notice": ...}`) go to the page as text.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from slimfuse.config import FaceEditorOptions
from slimfuse.errors import SlimfuseError
from slimfuse.serve.live_worker import CONTROL, HEADER, STAMP
from slimfuse.serve.planning import job_options, plan_job
from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.store import JobStore
from slimfuse.serve.tokens import connection_user, foreign, refusal

router = APIRouter()
LEASE_S = 10.0
POLICY_VIOLATION, TRY_AGAIN_LATER = 1008, 1013


async def _refuse(socket: WebSocket, code: int, error: str, message: str) -> None:
    await socket.send_text(json.dumps({"error": error, "message": message}))
    await socket.close(code=code, reason=message[:120])


@router.websocket("/v1/live")
async def live(socket: WebSocket, source: str, options: str = "{}") -> None:
    store: JobStore = socket.app.state.store
    settings: ServeSettings = socket.app.state.settings
    await socket.accept()
    problem = foreign(socket, settings, store.has_tokens())
    if problem is not None:  # a page of another site must not drive a camera session
        await _refuse(socket, POLICY_VIOLATION, "Forbidden", problem)
        return
    user = connection_user(socket, store, settings)
    if user is None:
        await _refuse(socket, POLICY_VIOLATION, "Unauthorized", refusal(socket))
        return
    asset = store.asset(user, source)
    if asset is None or asset["kind"] != "image":
        await _refuse(socket, POLICY_VIOLATION, "NotFound", f"no source image {source}")
        return
    path = store.asset_path(asset)
    try:
        chosen = job_options(json.loads(options), settings.memory_budget_mb)
        _, planned = plan_job([path], path, chosen, settings.models_dir)
    except (SlimfuseError, ValueError) as exc:
        name, message = type(exc).__name__, getattr(exc, "message", str(exc))
        await _refuse(socket, POLICY_VIOLATION, name, message)
        return
    budget = None if settings.memory_budget_mb is None else int(settings.memory_budget_mb * (1 << 20))
    holder = f"live-{id(socket)}"
    held, used = store.hold_live(user, holder, planned, budget, LEASE_S)
    if held is None:
        await _refuse(socket, TRY_AGAIN_LATER, "MemoryBudgetError",
                      f"this live session needs {planned / 2**20:.0f} MB, and {used / 2**20:.0f} MB of the server's "
                      f"{settings.memory_budget_mb:g} MB are held by running jobs and sessions; try again later")
        return
    request = {"sources": [str(path)], "options": {**chosen, "models_dir": settings.models_dir and str(settings.models_dir)}}
    worker = await asyncio.create_subprocess_exec(sys.executable, "-m", "slimfuse.serve.live_worker",
                                                  json.dumps(request), stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE)
    beat = asyncio.create_task(_heartbeat(store, held.id, holder))
    try:
        await _relay(socket, worker, lambda text: _checked_control(text, store, user))
    finally:
        beat.cancel()
        if worker.returncode is None:
            worker.kill()
        await worker.wait()
        store.succeed(held.id, holder, None, 0, {})
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the page may be gone already
            await socket.close()


async def _relay(socket: WebSocket, worker: asyncio.subprocess.Process,
                 check: Callable[[str], tuple[dict[str, Any] | None, str | None]]) -> None:
    assert worker.stdin is not None and worker.stdout is not None
    if not await _ready(socket, worker):  # models loaded, source prepared
        await _refuse(socket, 1011, "InternalError", "the live worker could not start")
        return
    try:
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:  # a control
                control, refusal = check(message["text"])
                if refusal is not None:
                    await socket.send_text(json.dumps({"notice": refusal, "level": "warning"}))
                if control:
                    payload = CONTROL + json.dumps(control).encode()
                    worker.stdin.write(HEADER.pack(len(payload)) + payload)
                continue
            frame = message["bytes"]
            worker.stdin.write(HEADER.pack(len(frame)) + frame)
            await worker.stdin.drain()
            answer = await _answer(socket, worker)
            if answer is None:
                return
            await socket.send_bytes(answer)
    except (WebSocketDisconnect, ConnectionError, KeyError):
        return  # the page went away: end the session


def _checked_control(text: str, store: JobStore, user: str) -> tuple[dict[str, Any] | None, str | None]:
    """The page's control as the worker takes it (only known keys, of their types; a source as the path of this
    user's own image), and why a part of it was refused (None: nothing was)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None, "a control is a JSON object"
    if not isinstance(data, dict):
        return None, "a control is a JSON object"
    control: dict[str, Any] = {key: data[key] for key in ("swap", "keep_mouth", "enhancer")
                               if isinstance(data.get(key), bool)}
    if data.get("selector_mode") in ("one", "many"):
        control["selector_mode"] = data["selector_mode"]
    refusal = None
    if "face_editor" in data:
        edits, refusal = _checked_edits(data["face_editor"])
        if edits:
            control["face_editor"] = edits
    if "source" in data:
        asset = store.asset(user, str(data["source"])) if isinstance(data["source"], str) else None
        if asset is None or asset["kind"] != "image":
            refusal = f"no source image {data['source']}"
        else:
            control.update(source_path=str(store.asset_path(asset)), source_name=asset["name"] or asset["id"])
    return control, refusal


def _checked_edits(data: object) -> tuple[dict[str, float], str | None]:
    """The face editor's values of a control (known names, numbers within -1..1), and why one was refused."""
    if not isinstance(data, dict):
        return {}, "face_editor takes an object of values by name"
    known = FaceEditorOptions().values()
    edits = {name: float(value) for name, value in data.items() if name in known
             and isinstance(value, int | float) and not isinstance(value, bool) and -1 <= value <= 1}
    refused = sorted(set(data) - set(edits))
    return edits, (f"face_editor: {', '.join(map(str, refused))}: not a value of the editor, or not within -1..1"
                   if refused else None)


async def _ready(socket: WebSocket, worker: asyncio.subprocess.Process) -> bool:
    """Whether the worker started (its first message, `{"ready": ...}`, goes to the page)."""
    payload = await _next(worker)
    if payload is None or payload[:STAMP] != CONTROL:
        return False
    await socket.send_text(payload[STAMP:].decode())
    return True


async def _answer(socket: WebSocket, worker: asyncio.subprocess.Process) -> bytes | None:
    """The worker's next frame (None once it has ended); its lines before it go to the page."""
    while (payload := await _next(worker)) is not None and payload[:STAMP] == CONTROL:
        await socket.send_text(payload[STAMP:].decode())
    return payload


async def _next(worker: asyncio.subprocess.Process) -> bytes | None:
    assert worker.stdout is not None
    try:
        head = await worker.stdout.readexactly(HEADER.size)
        return await worker.stdout.readexactly(HEADER.unpack(head)[0])
    except asyncio.IncompleteReadError:
        return None


async def _heartbeat(store: JobStore, job_id: str, holder: str) -> Any:
    while True:
        await asyncio.sleep(LEASE_S / 3)
        store.heartbeat(job_id, holder, LEASE_S)

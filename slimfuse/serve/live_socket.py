"""The live page's socket, `/v1/live?source=ASSET&token=TOKEN`: the browser sends its camera's newest frame as a
binary message (an 8-byte stamp of its choice, then a JPEG), waits for the answer (one frame in flight), and gets
the swapped frame back with the same stamp.

The session is planned like a job (the source photo, the client's options, the server's budget) and held in the
job store while it runs, so its planned peak counts against --memory-budget beside the running jobs: one that
cannot fit is refused with the reason. The swap runs in a process of its own (slimfuse.serve.live_worker); this
process only relays.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from slimfuse.errors import SlimfuseError
from slimfuse.serve.live_worker import CONTROL, HEADER
from slimfuse.serve.planning import job_options, plan_job
from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.store import JobStore
from slimfuse.serve.tokens import connection_user

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
    user = connection_user(socket, store, settings)
    if user is None:
        await _refuse(socket, POLICY_VIOLATION, "Unauthorized", "a valid token is needed (?token=TOKEN)")
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
        await _relay(socket, worker)
    finally:
        beat.cancel()
        if worker.returncode is None:
            worker.kill()
        await worker.wait()
        store.succeed(held.id, holder, None, 0, {})
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the page may be gone already
            await socket.close()


async def _relay(socket: WebSocket, worker: asyncio.subprocess.Process) -> None:
    assert worker.stdin is not None and worker.stdout is not None
    if await _answer(worker) is None:  # "ready": models loaded, source prepared
        await _refuse(socket, 1011, "InternalError", "the live worker could not start")
        return
    await socket.send_text(json.dumps({"ready": True}))
    try:
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:  # a control: {"swap": false}
                control = CONTROL + message["text"].encode()
                worker.stdin.write(HEADER.pack(len(control)) + control)
                continue
            frame = message["bytes"]
            worker.stdin.write(HEADER.pack(len(frame)) + frame)
            await worker.stdin.drain()
            answer = await _answer(worker)
            if answer is None:
                return
            await socket.send_bytes(answer)
    except (WebSocketDisconnect, ConnectionError, KeyError):
        return  # the page went away: end the session


async def _answer(worker: asyncio.subprocess.Process) -> bytes | None:
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

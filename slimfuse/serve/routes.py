"""The /v1 endpoints: assets, jobs (create, list, get, cancel, retry, events, output), preview, faces, models,
health. Each user sees only their own assets and jobs: another user's id is answered like a missing one (404)."""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.background import BackgroundTask

from slimfuse.config import OPTIONS, SECTIONS
from slimfuse.media.formats import ALPHA_SUFFIXES
from slimfuse.models.choices import MESH_SWAPPER
from slimfuse.models.store import Store, default_home
from slimfuse.options import for_audience
from slimfuse.serve.errors import STATUS_BY_EXIT, ApiError, error_body
from slimfuse.serve.planning import client_options, job_options, plan_job
from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.tokens import COOKIE, request_token
from slimfuse.serve.store import FACES, FINAL_STATES, PREVIEW, SUCCEEDED, SWAP, Job, JobStore
from slimfuse.serve.uploads import TooLarge, receive

router = APIRouter(prefix="/v1")
# How often a waiting request (a preview, the events of a job) looks at the store, and how long a preview may take.
POLL_S = 0.02
EVENTS_POLL_S = 0.05
REQUEST_TIMEOUT_S = 120.0
SESSION_S = 7 * 24 * 3600
"""How long the page's cookie is kept."""


class Reference(BaseModel):
    position: int = Field(0, ge=0, description="the face's index in the face list of the target (0 = largest)")
    frame: int = Field(0, ge=0, description="for a video target: the frame the face list was made from")


class JobRequest(BaseModel):
    sources: list[str] = Field(default_factory=list, description="asset ids of the source photos (needed when the "
                               "options' processors put a face in: the face swapper, as by default)")
    target: str = Field(..., description="asset id of the target image or video")
    audio: str | None = Field(None, description="asset id of the sound (a sound file or a video) the lip syncer's "
                              "mouth follows, which the output video carries (processors with lip_syncer)")
    options: dict[str, Any] = Field(default_factory=dict, description="options named as `slimfuse swap`'s")
    reference: Reference | None = Field(None, description="the face to replace (reference selection)")


class PreviewRequest(JobRequest):
    frame: int = Field(0, ge=0, description="for a video target: the frame to preview")


class FacesRequest(BaseModel):
    target: str
    frame: int = Field(0, ge=0)


def _store(request: Request) -> JobStore:
    return request.app.state.store


def _settings(request: Request) -> ServeSettings:
    return request.app.state.settings


def _user(request: Request) -> str:
    return str(request.state.user)


def _api_error(status: int, error: str, message: str) -> Exception:
    return ApiError(status, error, message)


def _asset(request: Request, asset_id: str, *kinds: str) -> dict[str, Any]:
    """The user's asset (404 for another's), of one of `kinds` when they are given (422 for another kind)."""
    asset = _store(request).asset(_user(request), asset_id)
    if asset is None:
        raise _api_error(404, "NotFound", f"asset {asset_id}: no such asset")
    if kinds and asset["kind"] not in kinds:
        raise _api_error(422, "UsageError", f"asset {asset_id}: is {_a(asset['kind'])}, not {_a(' or '.join(kinds))}")
    return asset


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _job(request: Request, job_id: str) -> Job:
    job = _store(request).job(job_id, _user(request))
    if job is None or job.row["kind"] != SWAP:
        raise _api_error(404, "NotFound", f"job {job_id}: no such job")
    return job


def _public_asset(asset: dict[str, Any]) -> dict[str, Any]:
    return {name: asset.get(name) for name in ("id", "kind", "name", "bytes", "width", "height", "frames", "duration",
                                               "created")}


# Assets ----------------------------------------------------------------------------------------------------


@router.post("/assets", status_code=201, summary="Upload an image, a video or a sound (the request body is the file)",
             openapi_extra={"requestBody": {"content": {"application/octet-stream": {"schema": {"type": "string",
                                                                                                 "format": "binary"}}}}})
async def upload(request: Request, name: str | None = None) -> JSONResponse:
    settings, store, user = _settings(request), _store(request), _user(request)
    limit = settings.max_upload_bytes
    declared = request.headers.get("content-length")
    too_large = _api_error(413, "UploadTooLarge", f"the upload is larger than --max-upload-mb "
                                                  f"{settings.max_upload_mb:g} MB")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    room = settings.max_storage_bytes - await asyncio.to_thread(store.bytes_used, user)
    if room <= 0:
        raise _api_error(507, "StorageLimitError", _storage_full(settings))
    try:
        asset = await receive(store, user, request.stream(), name, min(limit, room))
    except TooLarge:
        if room < limit:
            raise _api_error(507, "StorageLimitError", f"the upload does not fit in your storage of "
                                                       f"{settings.max_storage_mb:g} MB") from None
        raise too_large from None
    return JSONResponse(_public_asset(asset), status_code=201, headers={"Location": f"/v1/assets/{asset['id']}"})


@router.get("/assets", summary="Your uploads, newest first, and the storage you use")
def list_assets(request: Request) -> dict[str, Any]:
    settings, store, user = _settings(request), _store(request), _user(request)
    return {"assets": [_public_asset(asset) for asset in store.assets(user)],
            "storage": {"bytes": store.bytes_used(user), "limit_bytes": settings.max_storage_bytes}}


@router.delete("/assets/{asset_id}", status_code=204, summary="Delete an upload: its file goes, not only its row")
def delete_asset(request: Request, asset_id: str) -> Response:
    try:
        path = _store(request).delete_asset(_user(request), asset_id)
    except ValueError as exc:
        raise _api_error(409, "AssetInUse", f"asset {asset_id}: {exc}") from None
    if path is None:
        raise _api_error(404, "NotFound", f"asset {asset_id}: no such asset")
    path.unlink(missing_ok=True)
    return Response(status_code=204)


@router.get("/assets/{asset_id}", summary="An uploaded asset")
def get_asset(request: Request, asset_id: str) -> dict[str, Any]:
    return _public_asset(_asset(request, asset_id))


@router.get("/assets/{asset_id}/content", summary="The uploaded file")
def asset_content(request: Request, asset_id: str) -> FileResponse:
    asset = _asset(request, asset_id)
    return FileResponse(_store(request).asset_path(asset))


def _storage_full(settings: ServeSettings) -> str:
    return (f"your storage of {settings.max_storage_mb:g} MB (uploads and outputs) is full; delete uploads or jobs "
            "(DELETE /v1/assets/{id}, /v1/jobs/{id}) or wait for old files to expire")


# Jobs ------------------------------------------------------------------------------------------------------


def _planned(request: Request, body: JobRequest, budget: bool) -> tuple[dict[str, Any], int]:
    """The stored request of a job and its planned peak; refuses bad options and jobs that can never fit."""
    settings, store = _settings(request), _store(request)
    sources = [_asset(request, source, "image") for source in body.sources]
    target = _asset(request, body.target, "image", "video")
    sound = None if body.audio is None else store.asset_path(_asset(request, body.audio, "audio", "video"))
    options = job_options(body.options, settings.memory_budget_mb) if budget else client_options(body.options)
    paths = [store.asset_path(asset) for asset in sources]
    config, planned = plan_job(paths, store.asset_path(target), options, settings.models_dir, sound)
    suffix = target["suffix"]
    if config.transparent_output and suffix.lower() not in ALPHA_SUFFIXES:  # a transparent background keeps its alpha
        suffix = ".png" if target["kind"] == "image" else ".webm"
    inputs = [*paths, *([sound] if sound is not None else [])]  # the sound last, as the config takes it
    stored = {"sources": [_relative(store, path) for path in inputs], "target": _relative(store, store.asset_path(target)),
              "kind": target["kind"], "suffix": suffix, "options": options,
              "source_ids": body.sources, "target_id": body.target, "audio_id": body.audio,
              "reference": None if body.reference is None else body.reference.model_dump()}
    return stored, planned


def _relative(store: JobStore, path: Path) -> str:
    return str(path.relative_to(store.data_dir))


@router.post("/jobs", status_code=202, summary="Create a swap job (queued; 202 with its Location)")
def create_job(request: Request, body: JobRequest) -> JSONResponse:
    settings, store, user = _settings(request), _store(request), _user(request)
    if store.active_jobs(user) >= settings.max_jobs_per_user:
        raise _api_error(429, "TooManyJobsError", f"you have {settings.max_jobs_per_user} jobs queued or running "
                                                  "(--max-jobs-per-user); wait for one to finish")
    if store.bytes_used(user) >= settings.max_storage_bytes:  # outputs count as uploads do
        raise _api_error(507, "StorageLimitError", _storage_full(settings))
    stored, planned = _planned(request, body, budget=True)
    job = store.add_job(user, SWAP, stored, planned)
    return JSONResponse(_shown(job), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})


def _shown(job: Job) -> dict[str, Any]:
    shown = job.public()
    request = job.request
    shown.update(sources=request["source_ids"], target=request["target_id"], audio=request.get("audio_id"),
                 media=request["kind"], reference=request.get("reference"))
    return shown


@router.get("/jobs", summary="Your jobs, newest first")
def list_jobs(request: Request, limit: int = 100) -> dict[str, Any]:
    return {"jobs": [_shown(job) for job in _store(request).jobs(_user(request), SWAP, min(max(limit, 1), 500))]}


@router.get("/jobs/{job_id}", summary="One job: state, progress, timings, options, run report, error")
async def get_job(request: Request, job_id: str) -> dict[str, Any]:
    return _shown(_job(request, job_id))


@router.delete("/jobs/{job_id}", status_code=204, summary="Delete a finished job and its output file")
def delete_job(request: Request, job_id: str) -> Response:
    job = _job(request, job_id)
    try:
        files = _store(request).delete_job(job.id)
    except ValueError as exc:
        raise _api_error(409, "JobActive", f"job {job_id}: {exc}") from None
    for path in files:
        path.unlink(missing_ok=True)
    return Response(status_code=204)


@router.post("/jobs/{job_id}/cancel", summary="Cancel a job (a running one stops at its next frame)")
def cancel_job(request: Request, job_id: str) -> dict[str, Any]:
    job = _job(request, job_id)
    if job.state in FINAL_STATES:
        raise _api_error(409, "JobFinished", f"job {job_id}: is {job.state} already; nothing to cancel")
    cancelled = _store(request).cancel(job.id)
    assert cancelled is not None
    return _shown(cancelled)


@router.post("/jobs/{job_id}/retry", status_code=202, summary="Run a finished job again, as a new job")
def retry_job(request: Request, job_id: str) -> JSONResponse:
    old = _job(request, job_id).request
    body = JobRequest(sources=old["source_ids"], target=old["target_id"], audio=old.get("audio_id"),
                      options=old["options"], reference=old.get("reference"))
    return create_job(request, body)


@router.get("/jobs/{job_id}/events", summary="Progress as server-sent events until the job ends")
async def job_events(request: Request, job_id: str) -> StreamingResponse:
    _job(request, job_id)
    store, user = _store(request), _user(request)

    async def events() -> AsyncIterator[str]:
        last = None
        while True:
            job = await asyncio.to_thread(store.job, job_id, user)
            if job is None:
                return
            shown = _shown(job)
            state = (shown["state"], shown["done"], shown["total"])
            if state != last:
                last = state
                yield f"event: progress\ndata: {json.dumps(shown)}\n\n"
            if job.state in FINAL_STATES or await request.is_disconnected():
                return
            await asyncio.sleep(EVENTS_POLL_S)

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@router.get("/jobs/{job_id}/output", summary="Download the job's output")
def job_output(request: Request, job_id: str) -> FileResponse:
    job = _job(request, job_id)
    if job.state != SUCCEEDED or job.row["output"] is None:
        raise _api_error(409, "NotReady", f"job {job_id}: has no output ({job.state})")
    path = _store(request).data_dir / job.row["output"]
    return FileResponse(path, filename=f"slimfuse-{job.id}{path.suffix}")


# Requests the page waits for: run by a worker, answered here --------------------------------------------------


async def _wait(request: Request, kind: str, stored: dict[str, Any]) -> Job:
    store = _store(request)
    job = await asyncio.to_thread(store.add_job, _user(request), kind, stored, 0, 0)
    deadline = time.monotonic() + REQUEST_TIMEOUT_S
    while time.monotonic() < deadline:
        current = await asyncio.to_thread(store.job, job.id)
        assert current is not None
        if current.state in FINAL_STATES:
            if current.state != SUCCEEDED:
                raise _RequestFailed(error_body(current.row["error"], current.row["exit_code"], current.row["message"]))
            return current
        await asyncio.sleep(POLL_S)
    await asyncio.to_thread(store.cancel, job.id)
    raise _api_error(504, "Timeout", f"no worker answered within {REQUEST_TIMEOUT_S:g} s")


class _RequestFailed(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body["message"])
        self.body = body


def _failed(exc: _RequestFailed) -> JSONResponse:
    return JSONResponse(exc.body, status_code=STATUS_BY_EXIT.get(exc.body["exit_code"] or 1, 500))


@router.post("/preview", summary="One frame swapped with the given options (JPEG)",
             responses={200: {"content": {"image/jpeg": {}}}})
async def preview(request: Request, body: PreviewRequest) -> Any:
    stored, _ = await asyncio.to_thread(_planned, request, body, False)
    stored["frame"] = body.frame
    try:
        job = await _wait(request, PREVIEW, stored)
    except _RequestFailed as exc:
        return _failed(exc)
    return FileResponse(_store(request).data_dir / job.row["output"], media_type="image/jpeg",
                        headers={"Cache-Control": "no-store"}, background=BackgroundTask(_forget, request, job))


@router.post("/faces", summary="The faces of an image or of one video frame, largest first, with thumbnails")
async def faces(request: Request, body: FacesRequest) -> Any:
    target = _asset(request, body.target, "image", "video")
    store = _store(request)
    stored = {"target": _relative(store, store.asset_path(target)), "frame": body.frame}
    try:
        job = await _wait(request, FACES, stored)
    except _RequestFailed as exc:
        return _failed(exc)
    listed = json.loads((store.data_dir / job.row["output"]).read_text())
    _forget(request, job)
    return listed


def _forget(request: Request, job: Job) -> None:
    """A preview or a face list is read once: its row and its file go once it is answered."""
    for path in _store(request).delete_job(job.id):
        path.unlink(missing_ok=True)


# The server ------------------------------------------------------------------------------------------------


@router.get("/options", summary="The options a job may set, as the page's form shows them")
def options() -> dict[str, Any]:
    return {"sections": {name: kind.title for name, kind in SECTIONS.items()},
            "options": [entry.describe() for entry in for_audience(OPTIONS, "client")]}


@router.get("/models", summary="The models a job can use, and whether each is in the store")
def models(request: Request) -> dict[str, Any]:
    settings = _settings(request)
    store = Store(home=default_home(), models_dir=settings.models_dir, notify=lambda message: None)
    listed = [{"name": MESH_SWAPPER, "kind": "swapper", "state": "embedded", "size_mb": 0}]
    for spec in store.catalog.models:
        present = store.location(spec.name).is_file()
        listed.append({"name": spec.name, "kind": spec.kind, "state": "present" if present else "missing",
                       "size_mb": round((spec.size or 0) / (1 << 20), 1)})
    return {"models": listed}


@router.post("/session", status_code=204, summary="Keep the request's bearer token in an HttpOnly, same-site cookie, "
             "so the page's images, videos, event streams and live socket need no token in their URLs")
def start_session(request: Request) -> Response:
    response = Response(status_code=204)
    token = request_token(request)
    if token:  # the open mode has none: nothing to keep
        response.set_cookie(COOKIE, token, max_age=SESSION_S, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https", path="/")
    return response


@router.delete("/session", status_code=204, summary="Forget the page's cookie (sign out)")
def end_session() -> Response:
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get("/health", summary="Liveness, workers and the queue (no token needed)")
def health(request: Request) -> dict[str, Any]:
    return {"status": "ok", "workers": request.app.state.workers_alive(),
            "queue": _store(request).queue_length(), "memory_budget_mb": _settings(request).memory_budget_mb}

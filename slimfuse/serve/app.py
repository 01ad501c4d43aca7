"""The FastAPI application: who is asking (bearer tokens), errors as one-line JSON, the page and the /v1 API.

Every error a client sees is {"error": NAME, "exit_code": CODE, "message": ONE LINE}: slimfuse's own errors keep
their command-line names and exit codes; the server's own (401, 404, 413, 429, ...) have exit_code null. No
traceback ever leaves the process.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from slimfuse.errors import SlimfuseError
from slimfuse.serve.errors import STATUS_BY_EXIT, ApiError, error_body
from slimfuse.serve.live_socket import router as live_router
from slimfuse.serve.routes import router
from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.store import JobStore
from slimfuse.serve.tokens import connection_user, foreign, refusal

STATIC = Path(__file__).parent / "static"
def create_app(settings: ServeSettings, workers_alive: Callable[[], int] = lambda: 0) -> FastAPI:
    # The docs pages from files in the package, not a CDN: the server works offline.
    app = FastAPIOffline(title="slimfuse", description="Swap faces in images and videos within a memory budget.",
                         version="1", static_url="/docs-static")
    app.state.settings = settings
    app.state.store = JobStore(settings.data_dir)
    app.state.workers_alive = workers_alive

    @app.middleware("http")
    async def authenticate(request: Request, call_next: Callable) -> object:
        request.state.user = None
        problem = foreign(request, settings, app.state.store.has_tokens())
        if problem is not None:
            return JSONResponse(error_body("Forbidden", None, problem), status_code=403)
        if request.url.path.startswith("/v1/") and request.url.path != "/v1/health":
            user = connection_user(request, app.state.store, settings)
            if user is None:
                return JSONResponse(error_body("Unauthorized", None, refusal(request)), status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
            request.state.user = user
        return await call_next(request)

    @app.exception_handler(SlimfuseError)
    async def slimfuse_error(request: Request, exc: SlimfuseError) -> JSONResponse:
        return JSONResponse(error_body(type(exc).__name__, exc.exit_code, exc.message),
                            status_code=STATUS_BY_EXIT.get(exc.exit_code, 500))

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.error, None, exc.message), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        return JSONResponse(error_body("UsageError", 2, f"{where}: {first.get('msg')}" if where else
                                       str(first.get("msg"))), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        name = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        return JSONResponse(error_body(name, None, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body("InternalError", 1, f"internal error: {type(exc).__name__}"), status_code=500)

    app.include_router(router)
    app.include_router(live_router)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/live", include_in_schema=False)
    def live_page() -> FileResponse:
        return FileResponse(STATIC / "live.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app

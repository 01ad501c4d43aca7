"""The live page in headless Chromium with a fake camera (a y4m of the packaged photo, its face moving): frames go
to the server over the WebSocket and come back swapped, with the source's face in them; the page's own fps and
camera-to-screen latency are read; its controls change the running session (swap, another source face uploaded
from the page, within --max-upload-mb, the selector mode, the mouth; the face enhancer greyed out where the server
runs none). A session that cannot fit the server's memory budget is refused with the reason.
SLIMFUSE_SCREENSHOTS=DIR also keeps the screenshots there (docs/live)."""
from __future__ import annotations

import base64
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from screenshots import shot
from streams import moving_face, write_y4m
from slimfuse.bench.serve import running_server
from slimfuse.faces.analyse import FaceAnalyser
from people import who
from slimfuse.faces.identity import IdentityModel
from slimfuse.models.pool import ModelPool

playwright = pytest.importorskip("playwright.sync_api")
pytest.importorskip("wsproto", reason="uvicorn's WebSocket support (the serve extra installs it)")
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
WAIT_MS = int(os.environ.get("LIVE_WAIT_MS", "90000"))
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)")
RESULT_PNG = "() => document.getElementById('result').toDataURL('image/png')"


def _identity(pool: ModelPool, image: np.ndarray) -> np.ndarray:
    return IdentityModel(pool).descriptor(image, FaceAnalyser(pool).faces(image)[0])


def _source(base: str, path: Path) -> str:
    response = httpx.post(f"{base}/v1/assets", params={"name": path.name}, content=path.read_bytes(), timeout=60)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@contextmanager
def _live_page(folder: Path, source_path: Path, camera: list[np.ndarray], budget_mb: float,
               *options: str, query: str = "") -> Iterator[object]:
    """The live page of a fresh server (one worker, this budget, these options), opened with the source uploaded
    and started (`query`: more of the page's address, such as `&options=...`), the fake camera playing `camera`."""
    y4m = write_y4m(folder / "camera.y4m", camera)
    with running_server(folder / "data", "--memory-budget", f"{budget_mb:g}", *options, workers=1) as (_, base), \
            playwright.sync_playwright() as driver:
        source = _source(base, source_path)
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                         args=[*ARGS, f"--use-file-for-fake-video-capture={y4m}"])
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{base}/live?source={source}&autostart=1{query}")
        try:
            yield page
        finally:
            browser.close()


def _said(page: object, text: str) -> None:
    """Wait for the session's line that starts with `text` to be shown on the page."""
    page.wait_for_function("(text) => window.liveStats.notices.some((line) => line.startsWith(text))",  # type: ignore[attr-defined]
                           arg=text)


def _next_frames(page: object, count: int = 10) -> np.ndarray:
    """The picture once `count` more frames came back."""
    seen = page.evaluate("() => window.liveStats.frames")  # type: ignore[attr-defined]
    page.wait_for_function(f"() => window.liveStats.frames >= {seen + count}")  # type: ignore[attr-defined]
    data = page.evaluate(RESULT_PNG)  # type: ignore[attr-defined]
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data.split(",", 1)[1]))).convert("RGB"))


def test_the_browser_camera_comes_back_swapped_and_follows_the_controls(
        tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path, grace_hopper: np.ndarray,
        astronaut: np.ndarray, pool: ModelPool) -> None:
    big = tmp_path / "big.png"  # noise does not compress: over the server's 1 MB
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (700, 700, 3), np.uint8)).save(big)
    with _live_page(tmp_path, astronaut_path, moving_face(grace_hopper, 90), 1500, "--max-upload-mb", "1") as page:
        page.wait_for_function("() => window.liveStats.frames >= 60")
        stats = page.evaluate("() => ({fps: window.liveStats.fps, p50: window.liveStats.p50, "
                              "p95: window.liveStats.p95})")
        swapped = _next_frames(page, 1)
        shot(page, "1-live", tmp_path)
        assert page.is_disabled("#enhancer") and page.is_checked("#mouth")  # the server runs no face enhancer
        page.uncheck("#swap")  # a control while it runs: the camera comes back as it is
        _said(page, "swap off")
        unswapped = _next_frames(page)
        page.check("#swap")
        _said(page, "swap on")
        page.set_input_files("#another-source", str(big))
        _said(page, "big.png: the upload is larger than --max-upload-mb 1 MB")
        page.set_input_files("#another-source", str(grace_hopper_path))
        _said(page, "source face 2 of 2: grace_hopper.jpg")
        switched = _next_frames(page)
        page.select_option("#selector", "many")
        _said(page, "face selector mode many")
        page.uncheck("#mouth")
        _said(page, "mouth: swapped with the face")
        notices = page.evaluate("() => window.liveStats.notices")
        page.click("#stop")
        stopped = page.inner_text("#notice")
    people = {"astronaut": _identity(pool, astronaut), "grace_hopper": _identity(pool, grace_hopper)}
    assert swapped.shape == (480, 640, 3)
    assert who(_identity(pool, swapped), people) == "astronaut"
    assert who(_identity(pool, unswapped), people) == "grace_hopper"
    assert who(_identity(pool, switched), people) == "grace_hopper"
    assert notices == ["swap off", "swap on", "big.png: the upload is larger than --max-upload-mb 1 MB",
                       "source face 2 of 2: grace_hopper.jpg", "face selector mode many",
                       "mouth: swapped with the face"], notices
    assert stopped == ""  # the last session's line does not stay after Stop
    assert stats["fps"] > 0 and 0 < stats["p50"] <= stats["p95"], stats  # how fast: the benchmarks' to report
    print(f"browser round trip: {stats}")


def test_a_session_that_cannot_fit_is_refused_with_the_reason(tmp_path: Path, astronaut_path: Path,
                                                             grace_hopper: np.ndarray) -> None:
    with _live_page(tmp_path, astronaut_path, moving_face(grace_hopper, 10), budget_mb=100) as page:
        page.wait_for_selector("#error:not([hidden])")
        message = page.inner_text("#error")
        shot(page, "2-refused", tmp_path)
    assert "--memory-budget 100 MB is too small" in message, message

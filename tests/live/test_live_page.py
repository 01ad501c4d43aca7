"""The live page in headless Chromium with a fake camera (a y4m of the packaged photo, its face moving): frames go
to the server over the WebSocket and come back swapped, with the source's face in them; the page's own fps and
camera-to-screen latency are read. A session that cannot fit the server's memory budget is refused with the reason.
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
from slimfuse.faces.identity import SAME_PERSON_DISTANCE, IdentityModel, distance
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
def _live_page(folder: Path, source_path: Path, camera: list[np.ndarray], budget_mb: float) -> Iterator[object]:
    """The live page of a fresh server (one worker, this budget), opened with the source uploaded and started, the
    fake camera playing `camera`."""
    y4m = write_y4m(folder / "camera.y4m", camera)
    with running_server(folder / "data", "--memory-budget", f"{budget_mb:g}", workers=1) as (_, base), \
            playwright.sync_playwright() as driver:
        source = _source(base, source_path)
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                         args=[*ARGS, f"--use-file-for-fake-video-capture={y4m}"])
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{base}/live?source={source}&autostart=1")
        try:
            yield page
        finally:
            browser.close()


def test_the_browser_camera_comes_back_swapped(tmp_path: Path, astronaut_path: Path, grace_hopper: np.ndarray,
                                               astronaut: np.ndarray, pool: ModelPool) -> None:
    with _live_page(tmp_path, astronaut_path, moving_face(grace_hopper, 90), budget_mb=1500) as page:
        page.wait_for_function("() => window.liveStats.frames >= 60")
        stats = page.evaluate("() => ({fps: window.liveStats.fps, p50: window.liveStats.p50, "
                              "p95: window.liveStats.p95})")
        result = page.evaluate(RESULT_PNG)
        shot(page, "1-live", tmp_path)
        page.uncheck("#swap")  # a control while it runs: the camera comes back as it is
        seen = page.evaluate("() => window.liveStats.frames")
        page.wait_for_function(f"() => window.liveStats.frames >= {seen + 10}")
        plain = page.evaluate(RESULT_PNG)
    swapped, unswapped = (np.asarray(Image.open(io.BytesIO(base64.b64decode(data.split(",", 1)[1]))).convert("RGB"))
                          for data in (result, plain))
    assert swapped.shape == (480, 640, 3)
    assert distance(_identity(pool, swapped), _identity(pool, astronaut)) < SAME_PERSON_DISTANCE
    assert distance(_identity(pool, unswapped), _identity(pool, grace_hopper)) < SAME_PERSON_DISTANCE
    assert stats["fps"] > 3 and 0 < stats["p50"] <= stats["p95"] < 1000, stats
    print(f"browser round trip: {stats}")


def test_a_session_that_cannot_fit_is_refused_with_the_reason(tmp_path: Path, astronaut_path: Path,
                                                             grace_hopper: np.ndarray) -> None:
    with _live_page(tmp_path, astronaut_path, moving_face(grace_hopper, 10), budget_mb=100) as page:
        page.wait_for_selector("#error:not([hidden])")
        message = page.inner_text("#error")
        shot(page, "2-refused", tmp_path)
    assert "--memory-budget 100 MB is too small" in message, message

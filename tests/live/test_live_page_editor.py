"""The live page's face editor sliders in headless Chromium (Debian's, with a fake camera), on a server whose
--models-dir holds the live_portrait parity stand-ins and a session started with `--processors face_swapper
face_editor` (the page's ?options=): a slider per value, each acting on the running session when let go."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

from parity import standins
from streams import moving_face
from test_live_page import CHROMIUM, _live_page, _said

pytest.importorskip("playwright.sync_api")
pytest.importorskip("wsproto", reason="uvicorn's WebSocket support (the serve extra installs it)")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)")


def test_the_editor_sliders_change_the_running_session(tmp_path: Path, models_dir: Path, astronaut_path: Path,
                                                       grace_hopper: np.ndarray) -> None:
    placed = models_dir  # the server inherits the fixture's isolated SLIMFUSE_HOME: the stand-ins' records stay there
    for contract in standins.LIVE_PORTRAIT:
        standins.write(contract.name, placed)
    options = quote(json.dumps({"processors": ["face_swapper", "face_editor"], "face_editor_head_yaw": 0.25}))
    with _live_page(tmp_path, astronaut_path, moving_face(grace_hopper, 30), 1500, "--models-dir", str(placed),
                    query=f"&options={options}") as page:
        page.wait_for_function("() => window.liveStats.frames >= 5")  # type: ignore[attr-defined]
        assert page.locator("#face-editor input[type=range]").count() == 14  # type: ignore[attr-defined]
        assert page.input_value("#edit-head_yaw") == "0.25"  # type: ignore[attr-defined]
        page.fill("#edit-mouth_smile", "0.75")  # type: ignore[attr-defined]
        _said(page, "face editor: mouth smile 0.75")
        page.fill("#edit-head_yaw", "-1")  # type: ignore[attr-defined]
        _said(page, "face editor: head yaw -1")
        seen = page.evaluate("() => window.liveStats.frames")  # type: ignore[attr-defined]
        page.wait_for_function(f"() => window.liveStats.frames >= {seen + 3}")  # type: ignore[attr-defined]
        notices = page.evaluate("() => window.liveStats.notices")  # type: ignore[attr-defined]
    assert notices == ["face editor: mouth smile 0.75", "face editor: head yaw -1"], notices


def test_a_session_without_an_editor_shows_no_sliders(tmp_path: Path, astronaut_path: Path,
                                                      grace_hopper: np.ndarray) -> None:
    with _live_page(tmp_path, astronaut_path, moving_face(grace_hopper, 10), 1500) as page:
        page.wait_for_function("() => window.liveStats.frames >= 3")  # type: ignore[attr-defined]
        assert page.is_hidden("#face-editor")  # type: ignore[attr-defined]

"""The web page in a real browser: Debian's chromium, driven headless by Playwright (never `playwright install`).

Uploads the sample photos, sees the preview change with an option, picks the reference face in the gallery, runs
the job to 100%, sees the result, downloads it (equal to the job's output); then a video target's frame slider,
an error line, and a narrow window; a lip sync job with its sound picked on the page. SLIMFUSE_SCREENSHOTS=DIR also
keeps the screenshots there (docs/serve)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from screenshots import shot
from served import (Server, create_token, lip_sync_inputs, png_bytes, samples, serving, serving_lip_syncer,
                    small_clip)
from voices import assert_in_sync, output_sound, sync_scores

from slimfuse.models.store import Store
from slimfuse.samples import ASTRONAUT_FACE

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
WAIT_MS = 60_000

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("page"), workers=2) as running:
        yield running


@pytest.fixture()
def page(tmp_path: Path) -> Iterator[object]:
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
        opened = context.new_page()
        opened.set_default_timeout(WAIT_MS)
        yield opened
        context.close()
        browser.close()


# The preview as the page shows it: its pixels drawn on a canvas, summed in blocks.
PIXELS = """() => { const image = document.getElementById('preview'); const canvas = document.createElement('canvas');
  canvas.width = image.naturalWidth; canvas.height = image.naturalHeight; const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0); const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
  const sums = new Array(64).fill(0); for (let i = 0; i < data.length; i += 4) sums[(i >> 12) % 64] += data[i];
  return sums; }"""


def _preview_after(page, action) -> list[int]:  # noqa: ANN001
    """The preview's pixels once `action` has made the page show a new one."""
    before = page.get_attribute("#preview", "data-version")
    with page.expect_response(lambda response: response.url.endswith("/v1/preview") and response.ok):
        action()
    page.wait_for_function(f"(document.getElementById('preview').dataset.version || '') !== '{before or ''}' && "
                           "document.getElementById('preview').complete")
    return page.evaluate(PIXELS)


def _set(page, selector: str, value: str) -> None:  # noqa: ANN001
    """Type a value into a field and leave it, as a user does (the form acts on change)."""
    page.fill(selector, value)
    page.dispatch_event(selector, "change")


def test_the_page_from_upload_to_download(server: Server, page, tmp_path: Path) -> None:  # noqa: ANN001
    astronaut, grace_hopper = samples()
    page.goto(server.base)
    page.wait_for_selector("#more-options")
    page.wait_for_function("!document.getElementById('options-status')")  # the form is built
    with server.client() as client:
        offered = {option["name"] for option in client.get("/v1/options").json()["options"] if not option["alias_of"]}
    shown = set(page.evaluate("[...document.getElementById('options').elements].map(el => el.name).filter(Boolean)"))
    assert shown == offered  # every option a job may set (an alias aside), and no other, has a control
    unlabelled = page.evaluate("""[...document.querySelectorAll('input, select')]
        .filter(el => !el.labels.length && !el.getAttribute('aria-label')).map(el => el.id || el.name)""")
    assert unlabelled == []
    shot(page, "1-empty", tmp_path)

    wall = tmp_path / "wall.png"  # a source photo without a face: the user takes it out again
    wall.write_bytes(png_bytes(np.full((96, 128, 3), 120, np.uint8)))
    page.set_input_files("#source-file", [str(astronaut), str(wall)])
    page.wait_for_function("document.querySelectorAll('#source-list img').length === 2")
    page.set_input_files("#target-file", str(grace_hopper))
    page.wait_for_function("document.getElementById('error').textContent.startsWith('wall.png: no face')")
    assert page.is_visible("#model-hint")  # only the embedded swapper here: the hint says how to add the others
    page.wait_for_function("document.querySelectorAll('#uploads tbody tr').length === 3")
    first = _preview_after(page, lambda: page.click("button[aria-label='Remove wall.png']"))
    assert page.inner_text("#error") == "" and page.locator("#source-list img").count() == 1
    page.wait_for_function("document.querySelectorAll('#uploads tbody tr').length === 2")  # its upload is gone too
    page.wait_for_selector("#faces button")
    changed = _preview_after(page, lambda: _set(page, "#target_face_size", "64"))
    assert changed != first
    restored = _preview_after(page, lambda: _set(page, "#target_face_size", "512"))
    assert restored == first  # the same options, the same preview
    page.click("#more-options summary")
    with page.expect_request(lambda request: request.url.endswith("/v1/preview")) as asked:
        _set(page, "#face_detector_score", "0.55")  # one of "More options"
    assert asked.value.post_data_json["options"] == {"face_detector_score": 0.55}  # what differs from the defaults
    shot(page, "2a-more-options", tmp_path)
    _preview_after(page, lambda: _set(page, "#face_detector_score", ""))
    page.click("#more-options summary")
    face = page.locator("#faces button").first
    _preview_after(page, face.click)
    assert face.get_attribute("aria-pressed") == "true"
    assert page.input_value("#face_selector_mode") == "reference"
    page.wait_for_function("document.getElementById('preview-status').textContent.startsWith('Preview')")
    shot(page, "2-preview-and-faces", tmp_path)

    page.keyboard.press("Tab")  # the run button is reached and pressed from the keyboard
    page.focus("#run")
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('progress').value === 1")
    assert page.inner_text("#progress-text") == "100%"
    page.wait_for_selector("#result figure:nth-child(2) img")
    page.wait_for_function("[...document.querySelectorAll('#result img')].every(img => img.naturalWidth === 512)")
    assert page.locator("#result figcaption").all_inner_texts() == ["Before", "After"]
    page.wait_for_selector("#jobs tbody td.state-succeeded")
    shot(page, "3-result", tmp_path)
    with page.expect_download() as download:
        page.click("#download")
    saved = tmp_path / "download.jpg"
    download.value.save_as(saved)
    with server.client() as client:
        job = client.get("/v1/jobs").json()["jobs"][0]
        assert job["state"] == "succeeded" and job["reference"] == {"position": 0, "frame": 0}
        assert saved.read_bytes() == client.get(f"/v1/jobs/{job['id']}/output").content
    assert len(list((server.data_dir / "outputs").glob(f"{job['id']}*"))) == 1
    page.locator("#jobs tbody tr").first.get_by_role("button", name="Delete").click()
    page.wait_for_function("document.querySelector('#jobs tbody td.hint')")  # "No jobs yet."
    assert list((server.data_dir / "outputs").glob(f"{job['id']}*")) == []  # the file, not only the row

    clip = small_clip(tmp_path / "clip.mp4", frames=12)
    _preview_after(page, lambda: page.set_input_files("#target-file", str(clip)))
    assert page.is_visible("#frame") and page.get_attribute("#frame", "max") == "11"
    assert page.is_visible("#trim_frame_end") and page.inner_html("#result") == ""
    page.fill("#frame", "9")
    with page.expect_request(lambda request: request.url.endswith("/v1/preview")) as asked, \
            page.expect_response(lambda response: response.url.endswith("/v1/faces")):
        page.dispatch_event("#frame", "change")
    assert asked.value.post_data_json["frame"] == 9
    page.wait_for_function("document.querySelectorAll('#faces button').length === 1")
    page.wait_for_function("document.getElementById('preview-status').textContent.startsWith('Preview')")
    shot(page, "4-video-target", tmp_path)

    text = tmp_path / "notes.jpg"
    text.write_text("not a photo\n" * 50)
    page.set_input_files("#target-file", str(text))
    page.wait_for_selector("#error:not([hidden])")
    message = page.inner_text("#error")
    assert message.startswith("notes.jpg: ") and "Traceback" not in message
    page.set_viewport_size({"width": 400, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    shot(page, "5-error-narrow", tmp_path)


def test_a_token_goes_into_an_httponly_cookie_once_and_never_into_a_url(tmp_path: Path, page) -> None:  # noqa: ANN001
    data = tmp_path / "data"
    token = create_token(data, "alice")
    astronaut, _ = samples()
    with serving(data) as server:
        urls: list[str] = []
        page.on("request", lambda request: urls.append(request.url))
        page.goto(server.base)
        page.wait_for_selector("#token-form:not([hidden])")  # the page asks for the token
        page.fill("#token", token)
        page.click("#token-form button[type=submit]")
        page.wait_for_function("!document.getElementById('options-status')")  # the options loaded with the cookie
        page.set_input_files("#source-file", str(astronaut))
        page.set_input_files("#target-file", str(astronaut))
        page.wait_for_selector("#preview:not([hidden])")
        assert page.evaluate("document.cookie") == "" and page.evaluate("localStorage.length") == 0  # no script sees it
        assert urls and not any(token in url for url in urls)


def test_a_lip_sync_job_with_a_sound_picked_on_the_page(tmp_path: Path, page, store: Store,  # noqa: ANN001
                                                        astronaut: np.ndarray) -> None:
    """The sound's picker shows once lip_syncer is ticked; a sound uploaded there is picked, and the job needs no
    source photo: its output carries the sound, the mouth in sync with it."""
    inputs = lip_sync_inputs(tmp_path, astronaut)
    with serving_lip_syncer(tmp_path / "server", store) as server:
        page.goto(server.base)
        page.wait_for_function("!document.getElementById('options-status')")
        assert page.is_hidden("#sound-drop")
        page.set_input_files("#target-file", str(inputs["clip"]))
        page.wait_for_function("document.querySelectorAll('#uploads tbody tr').length === 1")
        page.click("#more-options summary")
        assert page.is_disabled("#run")  # the default chain swaps faces: a source photo is needed
        page.check("input[name=processors][value=face_debugger]")
        page.wait_for_function("!document.getElementById('run').disabled")  # a chain without the face swapper
        page.uncheck("input[name=processors][value=face_debugger]")
        page.check("input[name=processors][value=lip_syncer]")
        page.wait_for_selector("#sound-drop:not([hidden])")
        assert page.is_disabled("#run")  # no source photo and no sound yet
        page.set_input_files("#sound-file", str(inputs["voice"]))
        page.wait_for_function("document.getElementById('sound').selectedOptions[0].text === 'voice.wav (2.7 s)'")
        # The preview runs 150 ms after the last change (app.js debounces it): wait for its status, not a race.
        page.wait_for_function(
            "document.getElementById('preview-status').textContent.startsWith('No preview with the lip syncer')")
        shot(page, "6-lip-sync", tmp_path)
        page.click("#run")
        page.wait_for_selector("#jobs tbody td.state-succeeded")
        with server.client() as client:
            job = client.get("/v1/jobs").json()["jobs"][0]
            sound = next(asset for asset in client.get("/v1/assets").json()["assets"] if asset["kind"] == "audio")
            assert job["state"] == "succeeded" and job["audio"] == sound["id"] and job["sources"] == []
            assert job["options"]["processors"] == ["lip_syncer"]
            output = tmp_path / "dubbed.mkv"
            output.write_bytes(client.get(f"/v1/jobs/{job['id']}/output").content)
    _, scores = sync_scores(output, ASTRONAUT_FACE)
    assert_in_sync(scores)
    assert output_sound(output)[0].size > 0

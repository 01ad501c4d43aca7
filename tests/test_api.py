"""slimfuse.Swapper, the Python API everything else is built on: options checked as the command line checks them,
faces listed for a gallery, images, videos and streams swapped with shared models, safe to share between threads."""
from __future__ import annotations

import threading
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from scenes import group
from slimfuse import Swapper
from slimfuse.bench.clips import make_clip, pan
from slimfuse.cli.main import main
from slimfuse.errors import NoTargetFaceError, UsageError
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.identity import SAME_PERSON_DISTANCE, IdentityModel, distance
from slimfuse.models.pool import ModelPool


@pytest.fixture(scope="module")
def swapper(astronaut_path: Path) -> Swapper:
    with Swapper([astronaut_path]) as shared:
        yield shared


def _identity(pool: ModelPool, image: np.ndarray, face_index: int = 0) -> np.ndarray:
    return IdentityModel(pool).descriptor(image, FaceAnalyser(pool).faces(image)[face_index])


def test_a_bad_option_gets_the_command_lines_message(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError) as raised:
        Swapper([astronaut_path], face_enhancer_blend=120)
    code = main(["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(tmp_path / "o.png"),
                 "--face-enhancer-blend", "120"])
    assert code == raised.value.exit_code == 2
    line = capsys.readouterr().err.strip().splitlines()[0]
    assert line == f"slimfuse: {raised.value.message}; see slimfuse swap --help"  # the same message, and the help
    assert "--face-enhancer-blend: must lie between 0 and 100, got 120" in raised.value.message
    with pytest.raises(UsageError, match="unknown option face_enhancer_blnd"):
        Swapper([astronaut_path], face_enhancer_blnd=50)
    with pytest.raises(UsageError, match="give a source photo: face_swapper puts its face in"):
        Swapper([])


def test_faces_lists_what_a_gallery_needs(swapper: Swapper, grace_hopper: np.ndarray, astronaut: np.ndarray) -> None:
    scene = group(grace_hopper, astronaut, face_px=120)
    faces = swapper.faces(scene.image, identity=True)
    assert len(faces) == 6
    assert [face.box[2] - face.box[0] for face in faces] == sorted((f.box[2] - f.box[0] for f in faces), reverse=True)
    for face in faces:
        x0, y0, x1, y1 = face.box
        assert any(x0 < (a + c) / 2 < x1 and y0 < (b + d) / 2 < y1 for a, b, c, d in scene.faces)
        assert face.landmarks.shape == (468, 3) and face.five_points.shape == (5, 2)
        assert face.thumbnail.dtype == np.uint8 and max(face.thumbnail.shape[:2]) <= 112
        assert face.identity is not None and face.identity.shape == (128,)
    hopper = [face for face in faces if distance(face.identity, faces[0].identity) < SAME_PERSON_DISTANCE]  # type: ignore[arg-type]
    assert len(hopper) == 3  # three of each person on the canvas


def test_swap_image_puts_the_source_face_in(swapper: Swapper, pool: ModelPool, grace_hopper: np.ndarray,
                                            astronaut: np.ndarray) -> None:
    swapped = swapper.swap_image(grace_hopper)
    assert swapped.shape == grace_hopper.shape and swapped.dtype == np.uint8
    assert distance(_identity(pool, swapped), _identity(pool, astronaut)) < SAME_PERSON_DISTANCE
    assert np.array_equal(swapper.swap_image(grace_hopper), swapped)  # the same models, the same result


def test_a_reference_photo_chooses_whom_to_swap(tmp_path: Path, grace_hopper: np.ndarray, astronaut: np.ndarray,
                                                grace_hopper_path: Path, astronaut_path: Path) -> None:
    scene = group(grace_hopper, astronaut, face_px=120)
    with Swapper([grace_hopper_path]) as swapper:
        swapped = swapper.swap_image(scene.image, reference=astronaut_path)
    changed = np.any(swapped != scene.image, axis=2)
    for index, (x0, y0, x1, y1) in enumerate(scene.faces):
        inside = changed[int(y0):int(y1), int(x0):int(x1)].mean()
        assert (inside > 0.2) if index % 2 == 1 else (inside == 0)  # only the astronaut's three faces


def test_a_target_path_keeps_its_alpha_when_written(swapper: Swapper, tmp_path: Path,
                                                    grace_hopper: np.ndarray) -> None:
    alpha = np.full(grace_hopper.shape[:2], 180, dtype=np.uint8)
    target = tmp_path / "alpha.png"
    Image.fromarray(np.dstack([grace_hopper, alpha]), "RGBA").save(target)
    swapped = swapper.swap_image(target, output=tmp_path / "out.png")
    written = Image.open(tmp_path / "out.png")
    assert written.mode == "RGBA" and np.array_equal(np.asarray(written)[..., 3], alpha)
    assert np.array_equal(np.asarray(written)[..., :3], swapped)


def test_no_face_is_a_typed_error(swapper: Swapper) -> None:
    with pytest.raises(NoTargetFaceError) as raised:
        swapper.swap_image(np.full((200, 200, 3), 90, dtype=np.uint8))
    assert raised.value.exit_code == 9
    with pytest.raises(UsageError, match="H x W x 3 uint8"):
        swapper.swap_image(np.zeros((10, 10), dtype=np.float32))


def test_swap_video_reports_progress(swapper: Swapper, tmp_path: Path, grace_hopper: np.ndarray) -> None:
    clip = make_clip(tmp_path / "pan.mp4", pan(grace_hopper, (320, 240), 8), fps=25)
    seen: list[tuple[int, int | None]] = []
    result = swapper.swap_video(clip, tmp_path / "out.mp4", progress=lambda done, total: seen.append((done, total)))
    assert result.frames_written == 8 and [done for done, _ in seen] == list(range(1, 9))
    assert seen[-1][1] == 8
    with av.open(str(tmp_path / "out.mp4")) as container:
        assert sum(1 for _ in container.decode(video=0)) == 8


def test_stream_tracks_faces_across_frames(swapper: Swapper, pool: ModelPool, grace_hopper: np.ndarray,
                                           astronaut: np.ndarray) -> None:
    frames = list(pan(grace_hopper, (640, 360), 20))
    out = list(swapper.stream(iter(frames), fps=25))
    assert len(out) == 20 and all(a.shape == b.shape for a, b in zip(out, frames, strict=True))
    source = _identity(pool, astronaut)
    assert all(distance(_identity(pool, frame), source) < SAME_PERSON_DISTANCE for frame in out[::4])


def test_threads_take_turns_and_get_the_sequential_result(swapper: Swapper, grace_hopper: np.ndarray) -> None:
    expected = swapper.swap_image(grace_hopper)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(swapper.swap_image(grace_hopper))
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and len(results) == 3 and all(np.array_equal(result, expected) for result in results)


def test_sources_as_arrays_and_close_releases_the_models(astronaut: np.ndarray, grace_hopper: np.ndarray) -> None:
    swapper = Swapper([astronaut])
    swapper.swap_image(grace_hopper)
    assert swapper._run.pool.stats().resident
    swapper.close()
    assert swapper._run.pool.stats().resident == ()


def test_a_swapper_without_the_face_swapper_needs_no_source(grace_hopper: np.ndarray) -> None:
    """Swapper([], processors=["face_debugger"]) draws on the target's own face and changes nothing else."""
    with Swapper([], processors=["face_debugger"]) as drawer:
        drawn = drawer.swap_image(grace_hopper)
    changed = np.any(drawn != grace_hopper, axis=2)
    assert 0.002 < changed.mean() < 0.2

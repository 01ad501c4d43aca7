"""The whole image swap on real photos: identity moves to the source, nothing outside the face changes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scenes import ASTRONAUT_FACE, GRACE_HOPPER_FACE, group, place, rotated, small_face_on_4k, swap_file, swap_image
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.identity import SAME_PERSON_DISTANCE, IdentityModel, distance
from slimfuse.models.pool import ModelPool


def _descriptor(pool: ModelPool, image: np.ndarray) -> np.ndarray:
    return IdentityModel(pool).descriptor(image, FaceAnalyser(pool).faces(image)[0])


@pytest.mark.parametrize("direction", ["astronaut->grace_hopper", "grace_hopper->astronaut"])
def test_swapped_face_takes_the_source_identity(pool: ModelPool, tmp_path: Path, direction: str,
                                                grace_hopper_path: Path, astronaut_path: Path) -> None:
    source_path, target_path = (astronaut_path, grace_hopper_path) if direction.startswith("astronaut") else (
        grace_hopper_path, astronaut_path)
    source = np.asarray(Image.open(source_path).convert("RGB"))
    target = np.asarray(Image.open(target_path).convert("RGB"))
    result = swap_image(tmp_path, source_path, target)
    swapped = _descriptor(pool, result)
    to_source = distance(swapped, _descriptor(pool, source))
    to_target = distance(swapped, _descriptor(pool, target))
    assert to_source < SAME_PERSON_DISTANCE
    assert to_source < to_target


def test_outside_the_face_the_output_equals_the_target(pool: ModelPool, tmp_path: Path, astronaut_path: Path,
                                                       grace_hopper: np.ndarray) -> None:
    result = swap_image(tmp_path, astronaut_path, grace_hopper)
    changed = np.any(result != grace_hopper, axis=2)
    assert changed.sum() > 5000  # the face really was replaced
    points = FaceAnalyser(pool).faces(grace_hopper)[0].landmarks
    x0, y0 = points[:, :2].min(0)
    x1, y1 = points[:, :2].max(0)
    ys, xs = np.nonzero(changed)
    assert xs.min() >= x0 - 2 and xs.max() <= x1 + 2 and ys.min() >= y0 - 2 and ys.max() <= y1 + 2


def test_many_mode_swaps_every_face_and_one_mode_only_the_largest(pool: ModelPool, tmp_path: Path,
                                                                  grace_hopper: np.ndarray, astronaut: np.ndarray,
                                                                  grace_hopper_path: Path) -> None:
    scene = group(grace_hopper, astronaut, face_px=120)
    boxes = scene.faces
    # Make one face clearly the largest.
    canvas = scene.image.copy()
    boxes[0] = place(canvas, grace_hopper, GRACE_HOPPER_FACE, 170, (213, 213))

    def changed_faces(result: np.ndarray) -> list[bool]:
        diff = np.any(result != canvas, axis=2)
        return [bool(diff[int(b[1]):int(b[3]), int(b[0]):int(b[2])].mean() > 0.2) for b in boxes]

    many = swap_image(tmp_path, grace_hopper_path, canvas, face_selector_mode="many")
    assert changed_faces(many) == [True] * 6
    one = swap_image(tmp_path, grace_hopper_path, canvas, face_selector_mode="one")
    assert changed_faces(one) == [True] + [False] * 5


def test_reference_mode_swaps_only_the_reference_person(pool: ModelPool, tmp_path: Path, grace_hopper: np.ndarray,
                                                        astronaut: np.ndarray, astronaut_path: Path,
                                                        grace_hopper_path: Path) -> None:
    scene = group(grace_hopper, astronaut, face_px=120)
    result = swap_image(tmp_path, grace_hopper_path, scene.image, face_selector_mode="reference",
                   reference_face_image=astronaut_path)
    diff = np.any(result != scene.image, axis=2)
    swapped = [bool(diff[int(b[1]):int(b[3]), int(b[0]):int(b[2])].mean() > 0.2) for b in scene.faces]
    assert swapped == [False, True, False, True, False, True]  # the astronaut's faces only


@pytest.mark.parametrize("degrees", [-30, 30])
def test_rolled_heads_are_swapped(pool: ModelPool, tmp_path: Path, degrees: float, grace_hopper: np.ndarray,
                                  astronaut: np.ndarray, astronaut_path: Path) -> None:
    target = rotated(grace_hopper, degrees)
    result = swap_image(tmp_path, astronaut_path, target)
    swapped = _descriptor(pool, result)
    assert distance(swapped, _descriptor(pool, astronaut)) < distance(swapped, _descriptor(pool, target))


def test_grey_target_stays_grey_and_alpha_is_kept(pool: ModelPool, tmp_path: Path, grace_hopper: np.ndarray,
                                                  astronaut_path: Path) -> None:
    alpha = np.full(grace_hopper.shape[:2], 200, dtype=np.uint8)
    alpha[:50] = 0
    grey = np.asarray(Image.fromarray(grace_hopper).convert("L"))
    target = tmp_path / "grey_alpha.png"
    Image.fromarray(np.dstack([grey, alpha]), "LA").save(target)
    output = tmp_path / "out.png"
    swap_file(astronaut_path, target, output)
    written = Image.open(output)
    assert written.mode == "LA" and written.size == (grace_hopper.shape[1], grace_hopper.shape[0])
    values = np.asarray(written)
    assert np.array_equal(values[..., 1], alpha)
    assert np.any(values[..., 0] != grey)


@pytest.mark.parametrize("size", [64, 128])
def test_tiny_targets(pool: ModelPool, tmp_path: Path, astronaut: np.ndarray, grace_hopper_path: Path,
                      size: int) -> None:
    x0, y0, x1, y1 = ASTRONAUT_FACE
    crop = astronaut[max(0, y0 - 40):y1 + 40, max(0, x0 - 40):x1 + 40]
    tiny = np.asarray(Image.fromarray(crop).resize((size, size), Image.LANCZOS))
    result = swap_image(tmp_path, grace_hopper_path, tiny)
    assert result.shape == tiny.shape
    scale = size / crop.shape[1], size / crop.shape[0]
    left, top = (x0 - max(0, x0 - 40)) * scale[0], (y0 - max(0, y0 - 40)) * scale[1]
    face = (slice(int(top), int(top + (y1 - y0) * scale[1])), slice(int(left), int(left + (x1 - x0) * scale[0])))
    changed = np.abs(result.astype(np.int16) - tiny)[face].max(axis=2) > 8
    assert changed.mean() > 0.3, changed.mean()  # the face itself was replaced, not a few pixels of it


def test_small_face_on_a_4k_canvas_is_swapped_at_full_resolution(pool: ModelPool, tmp_path: Path,
                                                                 astronaut: np.ndarray,
                                                                 grace_hopper_path: Path) -> None:
    scene = small_face_on_4k(astronaut, ASTRONAUT_FACE, face_px=240)
    result = swap_image(tmp_path, grace_hopper_path, scene.image)
    assert result.shape == scene.image.shape
    x0, y0, x1, y1 = (int(v) for v in scene.faces[0])
    diff = np.any(result != scene.image, axis=2)
    assert diff[y0:y1, x0:x1].mean() > 0.3
    outside = diff.copy()
    outside[y0 - 60:y1 + 60, x0 - 60:x1 + 60] = False
    assert not outside.any()


def test_several_sources_of_one_person(pool: ModelPool, tmp_path: Path, grace_hopper: np.ndarray,
                                       astronaut: np.ndarray) -> None:
    sources = []
    for index, image in enumerate([astronaut, rotated(astronaut, 10), np.ascontiguousarray(astronaut[:, ::-1])]):
        path = tmp_path / f"source{index}.png"
        Image.fromarray(image).save(path)
        sources.append(path)
    target = tmp_path / "target.png"
    Image.fromarray(grace_hopper).save(target)
    output = tmp_path / "out.png"
    messages: list[str] = []
    swap_file(sources, target, output, messages.append)
    assert messages == []  # all three are recognized as one person
    result = np.asarray(Image.open(output).convert("RGB"))
    assert distance(_descriptor(pool, result), _descriptor(pool, astronaut)) < SAME_PERSON_DISTANCE


def test_8k_target(pool: ModelPool, tmp_path: Path, astronaut: np.ndarray, grace_hopper_path: Path) -> None:
    canvas = np.full((4320, 7680, 3), 110, dtype=np.uint8)
    box = place(canvas, astronaut, ASTRONAUT_FACE, 300, (5000, 3000))
    result = swap_image(tmp_path, grace_hopper_path, canvas)
    assert result.shape == canvas.shape
    x0, y0, x1, y1 = (int(v) for v in box)
    diff = np.any(result != canvas, axis=2)
    assert diff[y0:y1, x0:x1].mean() > 0.3
    diff[y0 - 80:y1 + 80, x0 - 80:x1 + 80] = False
    assert not diff.any()

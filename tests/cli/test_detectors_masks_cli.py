"""`slimfuse swap` with a neural detector, face masks and the frame enhancer, through the real command line, with
stand-in models placed in --models-dir (tests/neural_models.py) on the real photos."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

import neural_models as nm
from scenes import ASTRONAUT_FACE, GRACE_HOPPER_FACE, place
from slimfuse.metrics import psnr
from slimfuse.cli.main import main
from slimfuse.faces.align import five_points
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.neural_detect import detector_spec, letterbox
from slimfuse.models.pool import ModelPool


def _swap(source: Path, target: Path, output: Path, *extra: str) -> np.ndarray:
    """Run `slimfuse swap` and read the output back."""
    code = main(["swap", "-s", str(source), "-t", str(target), "-o", str(output), "--quiet", *extra])
    assert code == 0
    with Image.open(output) as image:
        return np.asarray(image)


def _paste_face(canvas: np.ndarray, photo: np.ndarray, face: tuple[int, int, int, int], face_px: int,
                corner: tuple[int, int]) -> tuple[int, int, int, int]:
    """Paste only the region around `photo`'s face (1.5 x the face), scaled so the face is `face_px` wide, with
    its top-left at `corner`; returns the pasted region x0 y0 x1 y1."""
    scale = face_px / (face[2] - face[0])
    cx, cy, half = (face[0] + face[2]) / 2, (face[1] + face[3]) / 2, 0.75 * (face[2] - face[0])
    region = photo[int(cy - half):int(cy + half), int(cx - half):int(cx + half)]
    small = cv2.resize(region, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    x0, y0 = corner
    canvas[y0:y0 + small.shape[0], x0:x0 + small.shape[1]] = small
    return x0, y0, x0 + small.shape[1], y0 + small.shape[0]


def test_a_neural_detector_decides_which_face_is_swapped(models_dir: Path, tmp_path: Path, pool: ModelPool,
                                                          grace_hopper: np.ndarray, grace_hopper_path: Path,
                                                          astronaut: np.ndarray) -> None:
    # The stand-in detector plants one face, at the place of Grace Hopper's face in her photo (the source), in
    # the detector's input (where the photo, which fits, is as it is). The target has the source's size and the
    # astronaut's face at that same place, and a second, small face that BlazeFace finds too.
    face = FaceAnalyser(pool).faces(grace_hopper)[0]
    assert face.landmarks is not None
    _, ratio = letterbox(grace_hopper, detector_spec("scrfd_2.5g"))
    box, points = face.box / np.tile(ratio, 2), five_points(face.landmarks) / ratio
    centre = (box[:2] + box[2:]) / 2
    plant = (16, int(centre[1] // 16), int(centre[0] // 16), 0.9, tuple(box), tuple(map(tuple, points)))
    nm.save(nm.planted_detector("scrfd_2.5g", [plant]), models_dir, "scrfd_2.5g")

    target = np.full_like(grace_hopper, 90)
    gx0, gy0, gx1, gy1 = GRACE_HOPPER_FACE
    place(target, astronaut, ASTRONAUT_FACE, gx1 - gx0, ((gx0 + gx1) // 2, (gy0 + gy1) // 2))
    sx0, sy0, sx1, sy1 = _paste_face(target, grace_hopper, GRACE_HOPPER_FACE, 100, (10, 430))
    target_path = tmp_path / "target.png"
    Image.fromarray(target).save(target_path)

    args = ("--face-selector-mode", "many", "--models-dir", str(models_dir))
    blaze = _swap(grace_hopper_path, target_path, tmp_path / "blaze.png", *args)
    neural = _swap(grace_hopper_path, target_path, tmp_path / "neural.png", *args,
                   "--face-detector-model", "scrfd_2.5g")
    small = (slice(sy0, sy1), slice(sx0, sx1))
    large = (slice(gy0, gy1), slice(gx0, gx1))
    assert np.any(blaze[small] != target[small], axis=2).sum() > 500  # BlazeFace finds and swaps both faces
    assert np.any(blaze[large] != target[large], axis=2).sum() > 5000
    assert np.array_equal(neural[small], target[small])  # the stand-in only the one it plants
    assert np.any(neural[large] != target[large], axis=2).sum() > 5000


def test_an_occluder_keeps_what_it_masks(models_dir: Path, tmp_path: Path, pool: ModelPool,
                                         grace_hopper: np.ndarray, grace_hopper_path: Path,
                                         astronaut_path: Path) -> None:
    # A swapper that paints the negative of the face, and an occluder that calls the crop's left half covered.
    nm.save(nm.identity_swapper("hyperswap_1a_256", invert=True), models_dir, "hyperswap_1a_256")
    nm.save(nm.recognizer(), models_dir, "arcface_w600k_r50")
    visible = np.zeros((256, 256), np.float32)
    visible[:, 128:] = 1.0
    nm.save(nm.occluder("xseg_1", visible=visible), models_dir, "xseg_1")
    face = FaceAnalyser(pool).faces(grace_hopper)[0]
    assert face.landmarks is not None
    x0, y0, x1, y1 = face.box.astype(int)
    nose, margin = int(face.landmarks[1, 0]), int(0.08 * (x1 - x0))
    left, right = (slice(y0, y1), slice(x0, nose - margin)), (slice(y0, y1), slice(nose + margin, x1))

    args = ("--models-dir", str(models_dir), "--face-swapper-model", "hyperswap_1a_256")
    boxed = _swap(astronaut_path, grace_hopper_path, tmp_path / "box.png", *args, "--face-mask-types", "box")
    occluded = _swap(astronaut_path, grace_hopper_path, tmp_path / "occluded.png", *args,
                     "--face-mask-types", "box", "occlusion", "--face-occluder-model", "xseg_1")
    difference = np.abs(boxed.astype(int) - grace_hopper).mean(axis=2)
    assert difference[left].mean() > 40 and difference[right].mean() > 40  # the box alone: all of the face
    assert np.array_equal(occluded[left], grace_hopper[left])  # the covered half is left as it was
    assert np.abs(occluded[right].astype(int) - grace_hopper[right]).mean() > 40


def test_the_area_mask_swaps_only_the_parts_it_names(models_dir: Path, tmp_path: Path, pool: ModelPool,
                                                      grace_hopper: np.ndarray, grace_hopper_path: Path,
                                                      astronaut_path: Path) -> None:
    nm.save(nm.identity_swapper("hyperswap_1a_256", invert=True), models_dir, "hyperswap_1a_256")  # the negative
    nm.save(nm.recognizer(), models_dir, "arcface_w600k_r50")
    landmarks = FaceAnalyser(pool).faces(grace_hopper)[0].landmarks
    assert landmarks is not None
    args = ("--models-dir", str(models_dir), "--face-swapper-model", "hyperswap_1a_256", "--face-mask-types", "box",
            "area")
    mouth = _swap(astronaut_path, grace_hopper_path, tmp_path / "mouth.png", *args, "--face-mask-areas", "mouth")
    lower = _swap(astronaut_path, grace_hopper_path, tmp_path / "lower.png", *args, "--face-mask-areas", "lower-face")

    def change(result: np.ndarray, vertex: int) -> float:  # at a FaceMesh vertex, in grey levels
        x, y = np.round(landmarks[vertex, :2]).astype(int)
        return float(np.abs(result[y, x].astype(int) - grace_hopper[y, x]).mean())

    lips, eye, nose_bridge, chin_above = 14, 145, 6, 200
    assert change(mouth, lips) > 40 and change(mouth, eye) == change(mouth, nose_bridge) == 0.0
    assert change(mouth, chin_above) == 0.0 and change(lower, chin_above) > 40 and change(lower, eye) == 0.0


def test_the_frame_enhancer_keeps_the_size_or_the_models_scale(models_dir: Path, tmp_path: Path,
                                                               grace_hopper: np.ndarray, astronaut_path: Path) -> None:
    nm.save(nm.resize_enhancer("real_esrgan_x2"), models_dir, "real_esrgan_x2")
    rgba = np.dstack([grace_hopper, np.linspace(0, 255, grace_hopper.shape[1], dtype=np.uint8)[None].repeat(
        grace_hopper.shape[0], axis=0)])
    target_path = tmp_path / "target.png"
    Image.fromarray(rgba, "RGBA").save(target_path)
    plain = _swap(astronaut_path, target_path, tmp_path / "plain.png")
    args = ("--models-dir", str(models_dir), "--frame-enhancer-model", "real_esrgan_x2",
            "--frame-enhancer-tile-size", "128", "--frame-enhancer-tile-overlap", "16")
    same = _swap(astronaut_path, target_path, tmp_path / "same.png", *args)
    larger = _swap(astronaut_path, target_path, tmp_path / "larger.png", *args, "--frame-enhancer-keep-scale")
    height, width = grace_hopper.shape[:2]
    assert plain.shape == same.shape == (height, width, 4) and larger.shape == (2 * height, 2 * width, 4)
    assert not np.array_equal(same[..., :3], plain[..., :3]) and psnr(same[..., :3], plain[..., :3]) > 30
    upscaled = cv2.resize(plain, (2 * width, 2 * height), interpolation=cv2.INTER_LINEAR)
    assert psnr(larger[..., :3], upscaled[..., :3]) > 30
    assert np.abs(larger[..., 3].astype(int) - upscaled[..., 3]).max() <= 1  # the alpha is scaled along


@pytest.mark.parametrize("options", [["--face-mask-padding", "1", "2", "3", "4", "5"],
                                     ["--frame-enhancer-tile-overlap", "200", "--frame-enhancer-model",
                                      "real_esrgan_x2"]])
def test_bad_mask_and_tile_settings_are_usage_errors(models_dir: Path, tmp_path: Path, options: list[str],
                                                     capsys: pytest.CaptureFixture[str], astronaut_path: Path,
                                                     grace_hopper_path: Path) -> None:
    output = tmp_path / "out.png"
    code = main(["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(output), *options])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and options[0] in err[0] and not output.exists()


def test_the_frame_enhancer_on_a_video(models_dir: Path, tmp_path: Path, grace_hopper: np.ndarray,
                                       astronaut_path: Path) -> None:
    from slimfuse.bench.clips import make_clip, pan
    from slimfuse.media.video_probe import probe

    nm.save(nm.resize_enhancer("real_esrgan_x2"), models_dir, "real_esrgan_x2")
    clip = make_clip(tmp_path / "clip.mp4", pan(grace_hopper, (320, 180), 6), audio=True)
    args = ["swap", "-s", str(astronaut_path), "-t", str(clip), "--models-dir", str(models_dir), "--quiet",
            "--frame-enhancer-model", "real_esrgan_x2", "--frame-enhancer-tile-size", "128"]
    assert main([*args, "-o", str(tmp_path / "same.mp4")]) == 0
    assert main([*args, "-o", str(tmp_path / "larger.mp4"), "--frame-enhancer-keep-scale"]) == 0
    same, larger = probe(tmp_path / "same.mp4"), probe(tmp_path / "larger.mp4")
    assert (same.width, same.height) == (320, 180) and (larger.width, larger.height) == (640, 360)
    assert same.has_audio and larger.has_audio

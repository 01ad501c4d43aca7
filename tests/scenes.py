"""Targets the tests compose from the packaged photos, with where their faces are."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from slimfuse.config import RunConfig
from slimfuse.models.store import Notify, Store
from slimfuse.pipeline.frames import FrameLoop
from slimfuse.pipeline.image import swap_image_file
from slimfuse.pipeline.run import Run, build_run
from slimfuse.samples import ASTRONAUT_FACE, GRACE_HOPPER_FACE



@dataclass(frozen=True)
class Scene:
    image: np.ndarray
    faces: list[tuple[float, float, float, float]]


def place(canvas: np.ndarray, photo: np.ndarray, face: tuple[int, int, int, int], face_px: float,
          centre: tuple[int, int]) -> tuple[float, float, float, float]:
    """Paste `photo` scaled so its face is `face_px` wide, its face centred at `centre`; returns the face box."""
    scale = face_px / (face[2] - face[0])
    small = cv2.resize(photo, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    fx, fy = (face[0] + face[2]) / 2 * scale, (face[1] + face[3]) / 2 * scale
    x0, y0 = int(round(centre[0] - fx)), int(round(centre[1] - fy))
    h, w = small.shape[:2]
    cx0, cy0 = max(x0, 0), max(y0, 0)
    cx1, cy1 = min(x0 + w, canvas.shape[1]), min(y0 + h, canvas.shape[0])
    canvas[cy0:cy1, cx0:cx1] = small[cy0 - y0:cy1 - y0, cx0 - x0:cx1 - x0]
    return (x0 + face[0] * scale, y0 + face[1] * scale, x0 + face[2] * scale, y0 + face[3] * scale)


def group(grace_hopper: np.ndarray, astronaut: np.ndarray, width: int = 1280, height: int = 853,
          face_px: float = 80) -> Scene:
    """Six people, faces about `face_px` wide, on one canvas: three of each photo."""
    canvas = np.full((height, width, 3), 90, dtype=np.uint8)
    faces = []
    for index in range(6):
        photo, box = (grace_hopper, GRACE_HOPPER_FACE) if index % 2 == 0 else (astronaut, ASTRONAUT_FACE)
        centre = (int(width * (index % 3 * 2 + 1) / 6), int(height * (index // 3 * 2 + 1) / 4))
        faces.append(place(canvas, photo, box, face_px, centre))
    return Scene(canvas, faces)


def rotated(photo: np.ndarray, degrees: float) -> np.ndarray:
    height, width = photo.shape[:2]
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), degrees, 1.0)
    return cv2.warpAffine(photo, matrix, (width, height), borderMode=cv2.BORDER_REFLECT)


def small_face_on_4k(photo: np.ndarray, face: tuple[int, int, int, int], face_px: float = 160) -> Scene:
    canvas = np.full((2160, 3840, 3), 120, dtype=np.uint8)
    box = place(canvas, photo, face, face_px, (2900, 700))
    return Scene(canvas, [box])


def run_for(sources: Path | Sequence[Path], target: Path | None = None, notify: Notify | None = None,
            store: Store | None = None, **options: object) -> Run:
    """A run of the real pipeline for `sources` with `options` named as the swap command's; store: an isolated
    store (stand-ins placed), else the user's."""
    listed = [sources] if isinstance(sources, Path) else list(sources)
    return build_run(RunConfig.from_options(listed, **options), target, notify=notify or (lambda message: None),
                     store=store)


def swap_file(sources: Path | Sequence[Path], target: Path, output: Path, notify: Notify | None = None,
              store: Store | None = None, **options: object) -> Path:
    """Swap an image file into `output` through the real pipeline."""
    return swap_image_file(run_for(sources, target, notify, store, **options), target, output).output


def frame_loop(source: Path, notify: Notify | None = None, **options: object) -> FrameLoop:
    """The frame loop of a video run (sources prepared, identity kept for the tracker)."""
    run = run_for(source, Path("clip.mp4"), notify, **options)
    return run.loop(run.prepare(keep_identity=True))


def swap_image(tmp_path: Path, source: Path, target: np.ndarray | Path, store: Store | None = None,
               **options: object) -> np.ndarray:
    """Run the real image swap on `target` (an array is saved as PNG first) and read the result back as RGB."""
    if isinstance(target, np.ndarray):
        target_path = tmp_path / "target.png"
        Image.fromarray(target).save(target_path)
    else:
        target_path = target
    output = swap_file(source, target_path, tmp_path / "out.png", store=store, **options)
    return np.asarray(Image.open(output).convert("RGB"))

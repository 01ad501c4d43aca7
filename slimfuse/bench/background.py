"""`slimfuse bench background`: the embedded background remover (MediaPipe's selfie segmentation) measured: mask
IoU against hand-checked masks of the packaged portraits and the development photos, and frames/s on 720p video.

The hand-checked masks (slimfuse/bench/background_masks/NAME.png, 1 bit) were drawn as outlines placed by hand on
each photo (the group photos at 640 px wide, a third of their size), refined by GrabCut only in a 6 px band along
the outline, then looked at enlarged over the photo and corrected until no stretch of background or person was on
the wrong side by more than a few pixels. What a person holds (the astronaut's helmet, a glass) counts as the
person. The remover runs on the photo at its own size; its alpha is averaged down to the mask's size and cut at
one half. tools/background_masks/make_masks.py holds the outlines and remakes the masks.

Frames/s: a 720p clip (the Grace Hopper portrait panned across a grey canvas) through `slimfuse swap --processors
background_remover` (the whole run: decode, the stage, encode; transparent to VP9 with alpha in WebM, the others to
H.264 in MP4), with its CPU time per frame, and the run's stage alone on frames already decoded.
"""
from __future__ import annotations

import io
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from slimfuse.bench.clips import make_clip, pan
from slimfuse.bench.photo_set import DEVELOPMENT, PhotosUnavailable, fetch
from slimfuse.config import RunConfig
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import VideoReader
from slimfuse.models.choices import SELFIE_SEGMENTATION
from slimfuse.pipeline.jobs import swap_job
from slimfuse.pipeline.run import build_run
from slimfuse.processors.background import BackgroundRemover
from slimfuse.samples import sample_path

PORTRAITS = ("grace_hopper", "astronaut")
SIZE = (1280, 720)
MODES: dict[str, dict[str, object]] = {
    "transparent": {},
    "colour": {"background_remover_fill_color": (0, 177, 64, 255)},
    "blur": {"background_remover_blur": 16},
}
"""The backgrounds measured, as options of the background remover."""


@dataclass(frozen=True)
class MaskRow:
    photo: str
    size: str
    iou: float
    person_share: float
    """The share of the mask that is the person (how much there was to find)."""


@dataclass(frozen=True)
class SpeedRow:
    mode: str
    output: str
    stage_fps: float
    """The stage alone, on decoded frames (from the median frame's time)."""
    video_fps: float
    """The whole run (`slimfuse swap`): decode, the stage, encode; loading included."""
    video_cpu_ms: float
    """CPU time of the whole run per frame, every thread counted: what a busy machine's other work moves least."""


def hand_mask(name: str) -> np.ndarray:
    """The hand-checked mask of photo `name` (bool, True: the person)."""
    data = resources.files("slimfuse.bench").joinpath("background_masks", f"{name}.png").read_bytes()
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("L")) > 127


def mask_iou(alpha: np.ndarray, truth: np.ndarray) -> float:
    """IoU of the alpha (uint8, any size: averaged to the mask's size, cut at one half) with a hand-checked mask."""
    shrunk = cv2.resize(alpha, (truth.shape[1], truth.shape[0]), interpolation=cv2.INTER_AREA) >= 128
    union = np.count_nonzero(shrunk | truth)
    return float(np.count_nonzero(shrunk & truth) / union) if union else 1.0


def photos(notify: Callable[[str], None]) -> dict[str, Path]:
    """The photos with hand-checked masks that can be had here (the development photos need npm)."""
    found = {name: sample_path(name) for name in PORTRAITS}
    try:
        found.update({path.stem: path for path in fetch(DEVELOPMENT)})
    except PhotosUnavailable as exc:
        notify(f"the development photos are left out: {exc}")
    return found


def config(**options: object) -> RunConfig:
    return RunConfig.from_options(processors=["background_remover"], **options)


def remover(run_config: RunConfig) -> BackgroundRemover:
    """The background remover stage of a run built from `run_config`."""
    stage = build_run(run_config, notify=lambda message: None).chain.frame_processors[0]
    assert isinstance(stage, BackgroundRemover)
    return stage


def measure_masks(found: dict[str, Path], crops: Path | None = None) -> list[MaskRow]:
    stage = remover(config())
    rows = []
    for name, path in found.items():
        rgb = np.asarray(Image.open(path).convert("RGB"))
        truth = hand_mask(name)
        alpha, _ = stage.segment(rgb)
        rows.append(MaskRow(name, f"{rgb.shape[1]}x{rgb.shape[0]}", round(mask_iou(alpha, truth), 4),
                            round(float(truth.mean()), 3)))
        if crops is not None:
            write_crops(crops, name, rgb, alpha, truth)
    return rows


def write_crops(folder: Path, name: str, rgb: np.ndarray, alpha: np.ndarray, truth: np.ndarray) -> None:
    """NAME_cutout.png: the person on a checkerboard (what a transparent background shows); NAME_errors.png: the
    photo at the mask's size, red where the remover missed the person, blue where it kept background."""
    folder.mkdir(parents=True, exist_ok=True)
    board = (((np.indices(rgb.shape[:2]) // 16).sum(axis=0) % 2) * 80 + 120).astype(np.uint8)[:, :, None]
    weight = alpha[:, :, None].astype(np.float32) / 255
    cutout = rgb * weight + board * (1 - weight)
    Image.fromarray(cutout.astype(np.uint8)).save(folder / f"{name}_cutout.png")
    small = cv2.resize(rgb, (truth.shape[1], truth.shape[0]), interpolation=cv2.INTER_AREA)
    kept = cv2.resize(alpha, (truth.shape[1], truth.shape[0]), interpolation=cv2.INTER_AREA) >= 128
    errors = small.copy()
    errors[truth & ~kept] = (220, 30, 30)
    errors[~truth & kept] = (30, 60, 220)
    Image.fromarray(errors).save(folder / f"{name}_errors.png")


def measure_speed(frames: int, folder: Path) -> list[SpeedRow]:
    photo = np.asarray(Image.open(sample_path("grace_hopper")).convert("RGB"))
    clip = make_clip(folder / "bench_720p.mp4", pan(photo, SIZE, frames, face_px=260), fps=25, preset="veryfast")
    info = probe(clip)
    with VideoReader(clip, info=info) as reader:
        decoded = [frame.rgb for frame in reader]
    rows = []
    for mode, options in MODES.items():
        run_config = config(**options)
        stage = remover(run_config)
        stage.process_frame(decoded[0])  # the session's first run is not counted
        times = []
        for rgb in decoded:
            started = time.perf_counter()
            stage.process_frame(rgb)
            times.append(time.perf_counter() - started)
        stage_fps = 1 / statistics.median(times)  # the median frame: a busy machine's spikes left out
        output = folder / ("out.webm" if stage.transparent else "out.mp4")
        started, cpu = time.perf_counter(), time.process_time()
        swap_job(run_config, clip, output)
        video_fps = frames / (time.perf_counter() - started)
        cpu_ms = (time.process_time() - cpu) * 1000 / frames
        rows.append(SpeedRow(mode, output.suffix, round(stage_fps, 1), round(video_fps, 1), round(cpu_ms, 1)))
    return rows


def run(frames: int = 100, json_path: Path | None = None, crops: Path | None = None,
        notify: Callable[[str], None] = print) -> tuple[list[MaskRow], list[SpeedRow]]:
    masks = measure_masks(photos(notify), crops)
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-background-") as folder:
        speed = measure_speed(frames, Path(folder))
    print(table(masks, speed, frames))
    if json_path is not None:
        json_path.write_text(json.dumps({"model": SELFIE_SEGMENTATION, "masks": [asdict(row) for row in masks],
                                         "frames": frames, "speed": [asdict(row) for row in speed]}, indent=2))
    return masks, speed


def table(masks: list[MaskRow], speed: list[SpeedRow], frames: int) -> str:
    mean = sum(row.iou for row in masks) / max(len(masks), 1)
    lines = [f"| photo ({SELFIE_SEGMENTATION}) | size | mask IoU | person share |", "|---|---|---|---|"]
    lines += [f"| {row.photo} | {row.size} | {row.iou:.3f} | {row.person_share:.2f} |" for row in masks]
    lines += [f"| mean | | {mean:.3f} | |", "",
              f"| background, 720p ({frames} frames) | output | stage frames/s | slimfuse swap frames/s | "
              "swap CPU ms/frame |", "|---|---|---|---|---|"]
    lines += [f"| {row.mode} | {row.output} | {row.stage_fps:.1f} | {row.video_fps:.1f} | {row.video_cpu_ms:.0f} |"
              for row in speed]
    return "\n".join(lines)


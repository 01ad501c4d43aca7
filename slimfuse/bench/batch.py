"""`slimfuse bench batch`: 50 images and a 720p clip with audio, swapped by one process in sequence, by 2 worker
processes (the clip in keyframe segments), and by Ray with 2 local workers, each against the plain transcode of
the clip in the same run. Reports throughput, the split's and the join's cost (the join as a share of the video's
time), per-frame PSNR of each segmented output against the single-process output (at the joins too), and the
speed-up Amdahl's law projects for 4, 16 and 64 workers from the measured per-segment times and serial part."""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import av
import numpy as np
from PIL import Image

from slimfuse.batch.items import BatchItem
from slimfuse.batch.pool import InlinePool, Pool, ProcessPool
from slimfuse.batch.runner import BatchResult, BatchRunner, ItemRow
from slimfuse.bench.clips import make_clip, pan
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import VideoReader
from slimfuse.media.video_writer import VideoWriter
from slimfuse.config import RunConfig
from slimfuse.metrics import psnr
from slimfuse.samples import sample_path

SIZE = (1280, 720)
FPS = 25
GOP = 50
IMAGE_PX = 512
PROJECTED_WORKERS = (1, 2, 4, 16, 64)


@dataclass
class Row:
    run: str
    workers: int
    images: int
    images_seconds: float
    images_per_s: float
    frames: int
    video_seconds: float
    fps: float
    x_transcode: float | None = None
    segments: int = 0
    split_seconds: float = 0.0
    join_seconds: float = 0.0
    join_share: float = 0.0
    join: str | None = None
    psnr_min: float | None = None
    psnr_min_at_joins: float | None = None
    psnr_mean: float | None = None
    segment_seconds: list[float] = field(default_factory=list)
    projected_speedup: dict[str, float] = field(default_factory=dict)


def make_images(folder: Path, count: int) -> list[Path]:
    """`count` portraits from the packaged photos: each of the two at several sizes and crops, some mirrored."""
    photos = [Image.open(sample_path(name)).convert("RGB") for name in ("grace_hopper", "astronaut")]
    paths = []
    for index in range(count):
        photo = photos[index % 2]
        scale = 0.7 + 0.3 * ((index // 2) % 5) / 4
        side = int(min(photo.size) * scale)
        image = photo.crop((0, 0, side, side)).resize((IMAGE_PX, IMAGE_PX))
        if index % 4 >= 2:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        path = folder / f"portrait-{index:03d}.jpg"
        image.save(path, quality=92)
        paths.append(path)
    return paths


def make_video(folder: Path, seconds: float) -> Path:
    photo = np.asarray(Image.open(sample_path("grace_hopper")).convert("RGB"))
    return make_clip(folder / "bench_720p.mp4", pan(photo, SIZE, round(seconds * FPS)), fps=FPS, audio=True,
                     preset="veryfast", crf=18, gop=GOP)


def transcode(clip: Path, output: Path) -> tuple[int, float]:
    """Decode and encode again with the swap's encoder settings: the floor any swap of the clip stands on."""
    settings = RunConfig().encode.settings(0)
    started = time.perf_counter()
    info = probe(clip)
    with VideoReader(clip, info=info) as reader, VideoWriter(output, info, settings) as writer:
        for frame in reader:
            writer.write(frame)
    return writer.frames_written, time.perf_counter() - started


def _batch(pool: Pool, items: list[BatchItem], folder: Path) -> BatchResult:
    try:
        return BatchRunner(items, {}, folder, pool).run()
    finally:
        pool.close()


def measure(name: str, pool: Pool, images: list[Path], clip: Path, folder: Path) -> tuple[Row, ItemRow]:
    folder.mkdir()
    source = (sample_path("astronaut"),)
    image_items = [BatchItem(source, path, folder / path.name) for path in images]
    started = time.perf_counter()
    image_result = _batch(pool, image_items, folder) if images else None
    images_seconds = time.perf_counter() - started if images else 0.0
    assert image_result is None or not image_result.failed, image_result
    video = _batch(_same_kind(pool), [BatchItem(source, clip, folder / clip.name)], folder)
    (item,) = video.rows
    assert item.status == "done", item
    row = Row(name, pool.workers, len(images), images_seconds, len(images) / images_seconds if images else 0.0,
              item.frames, video.seconds, item.frames / video.seconds, segments=item.segments,
              split_seconds=item.split_seconds, join_seconds=item.join_seconds,
              join_share=item.join_seconds / video.seconds, join=item.join, segment_seconds=item.segment_seconds)
    return row, item


def _same_kind(pool: Pool) -> Pool:
    """A fresh pool like `pool` (the images' pool is closed by then)."""
    if isinstance(pool, InlinePool):
        return InlinePool()
    if isinstance(pool, ProcessPool):
        return ProcessPool(pool.workers)
    from slimfuse.batch.ray_pool import RayPool

    return RayPool(pool.workers)


def compare(reference: Path, output: Path, item: ItemRow, clip: Path, row: Row) -> None:
    """Per-frame PSNR of `output` against the single-process `reference`, overall and at the joins (the first
    and last frame of each segment)."""
    from slimfuse.batch.segments import plan_segments, scan_keyframes

    values = []
    with av.open(str(reference)) as first, av.open(str(output)) as second:
        for a, b in zip(first.decode(video=0), second.decode(video=0), strict=True):
            values.append(psnr(a.to_ndarray(format="rgb24"), b.to_ndarray(format="rgb24")))
    row.psnr_min, row.psnr_mean = min(values), float(np.mean(values))
    if item.segments:
        starts = [span.start_index for span in plan_segments(scan_keyframes(clip), item.segments)][1:]
        at_joins = [values[index] for start in starts for index in (start - 1, start)]
        row.psnr_min_at_joins = min(at_joins) if at_joins else None


def project(row: Row, serial_seconds: float) -> None:
    """Amdahl's law from the measured parts: the serial part plus the sum of the segments' times shared by N
    workers, against one worker doing them all."""
    parallel = sum(row.segment_seconds)
    whole = serial_seconds + parallel
    row.projected_speedup = {str(n): round(whole / (serial_seconds + parallel / n), 2) for n in PROJECTED_WORKERS}


def run(images: int = 50, seconds: float = 120.0, ray: bool = True, json_path: Path | None = None,
        plot_path: Path | None = None) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-batch-") as scratch:
        folder = Path(scratch)
        image_paths = make_images(folder, images)
        clip = make_video(folder, seconds)
        frames, transcode_seconds = transcode(clip, folder / "transcode.mp4")
        transcode_fps = frames / transcode_seconds
        rows = [Row("transcode (decode + encode only)", 1, 0, 0.0, 0.0, frames, transcode_seconds, transcode_fps)]
        sequential, _ = measure("one process, in sequence", InlinePool(), image_paths, clip, folder / "sequential")
        rows.append(sequential)
        pools: list[tuple[str, str, Pool]] = [("--workers 2 (processes)", "workers", ProcessPool(2))]
        if ray:
            # Ray's socket paths must fit 107 bytes: a short folder of its own.
            ray_folder = Path(tempfile.mkdtemp(prefix="sfray-", dir="/tmp"))
            pools.append(("Ray, 2 local workers", "ray", _local_ray(ray_folder)))
        for name, subfolder, pool in pools:
            row, item = measure(name, pool, image_paths, clip, folder / subfolder)
            compare(folder / "sequential" / clip.name, folder / subfolder / clip.name, item, clip, row)
            # Whatever the ideal share of the segments does not explain is serial: split, join, model loading.
            project(row, max(0.0, row.video_seconds - sum(row.segment_seconds) / max(1, row.workers)))
            rows.append(row)
        if ray:
            import ray as ray_module

            ray_module.shutdown()
            shutil.rmtree(ray_folder, ignore_errors=True)
    for row in rows:
        row.x_transcode = round(row.fps / transcode_fps, 3)
    print(markdown_table(rows, frames, images))
    if json_path is not None:
        json_path.write_text(json.dumps({"images": images, "seconds": seconds, "frames": frames,
                                         "rows": [asdict(row) for row in rows]}, indent=2))
    if plot_path is not None:
        plot(rows, plot_path)
    return rows


def _local_ray(folder: Path) -> Pool:
    """A private Ray on loopback with its session files under `folder`; token auth stays off unless the caller's
    environment sets it (Ray 2.60 would write ~/.ray/auth_token)."""
    import os

    import ray as ray_module

    from slimfuse.batch.ray_pool import LOOPBACK, LOOPBACK_ENV, PACKAGE_ROOT, RayPool

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.update(LOOPBACK_ENV)
    ray_module.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address=LOOPBACK,
                    _temp_dir=str(folder), runtime_env={"env_vars": {"PYTHONPATH": PACKAGE_ROOT,
                                                                     "RAY_AUTH_MODE": os.environ["RAY_AUTH_MODE"],
                                                                     **LOOPBACK_ENV}})
    return RayPool(2)


def markdown_table(rows: list[Row], frames: int, images: int) -> str:
    lines = ["| run | images/s | video frames/s | x transcode | segments | split s | join s | join share | join | "
             "PSNR min dB | PSNR min at joins dB | projected x4 / x16 / x64 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        projected = " / ".join(f"{row.projected_speedup[key]:.2f}" for key in ("4", "16", "64")) \
            if row.projected_speedup else ""
        lines.append(f"| {row.run} | {row.images_per_s:.2f} | {row.fps:.1f} | {row.x_transcode:.2f} | "
                     f"{row.segments or ''} | {row.split_seconds:.2f} | {row.join_seconds:.2f} | "
                     f"{100 * row.join_share:.2f}% | {row.join or ''} | {_db(row.psnr_min)} | "
                     f"{_db(row.psnr_min_at_joins)} | {projected} |")
    lines.append("")
    lines.append(f"{images} images of {IMAGE_PX} px; {frames} frames of {SIZE[0]}x{SIZE[1]} at {FPS} fps with audio, "
                 f"a keyframe every {GOP} frames; libx264 veryfast, quality 80; the mesh swapper")
    return "\n".join(lines)


def _db(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 3.6))
    for row in rows:
        if row.projected_speedup:
            axes.plot(PROJECTED_WORKERS, [row.projected_speedup[str(n)] for n in PROJECTED_WORKERS], marker="o",
                      label=row.run)
    axes.plot(PROJECTED_WORKERS, PROJECTED_WORKERS, color="grey", linestyle=":", label="ideal")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log", base=2)
    axes.set_xlabel("workers")
    axes.set_ylabel("projected speed-up (Amdahl)")
    axes.set_title("slimfuse bench batch: a 720p video in keyframe segments")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)

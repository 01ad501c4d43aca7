"""`slimfuse bench video`: the video swap's speed against a plain transcode of the same clip, measured side by
side in one run, with peak memory and the effect of the detection interval, reuse and disk mode.

Every row runs in a fresh (spawned) process, so its peak RSS is its own. The clip is made from the packaged
photos: a 720p camera pan over Grace Hopper's portrait, with a sine-tone audio track.
"""
from __future__ import annotations

import json
import multiprocessing
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import av
import numpy as np
from PIL import Image

from slimfuse.bench.clips import make_clip, pan
from slimfuse.bench.fresh_process import measure_in_fresh_process
from slimfuse.memory.probe import peak_rss_mb
from slimfuse.metrics import psnr
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import VideoReader
from slimfuse.media.video_writer import VideoWriter
from slimfuse.samples import sample_path

SIZE = (1280, 720)


@dataclass(frozen=True)
class Variant:
    name: str
    swap: bool = True
    detect_interval: int | None = None
    """None: the default (--face-detector-interval)."""
    reuse_threshold: float = 0.0
    temp_format: str | None = None


VARIANTS = (
    Variant("transcode (decode + encode only)", swap=False),
    Variant("swap, streaming (default)"),
    Variant("swap, detector every frame", detect_interval=1),
    Variant("swap, reuse threshold 2", reuse_threshold=2.0),
    Variant("swap, disk mode (jpg temp frames)", temp_format="jpg"),
)


@dataclass(frozen=True)
class Row:
    variant: str
    frames: int
    seconds: float
    fps: float
    peak_rss_mb: float
    detections: int | None
    generated: int | None
    reused: int | None
    setup_seconds: float | None = None
    psnr_vs_default: float | None = None
    fps_ratio_vs_transcode: float | None = None
    fps_ratio_range: tuple[float, float] | None = None
    """The lowest and highest ratio over the rounds (None after one round)."""


def make_bench_clip(folder: Path, frames: int) -> Path:
    photo = np.asarray(Image.open(sample_path("grace_hopper")).convert("RGB"))
    return make_clip(folder / "bench_720p.mp4", pan(photo, SIZE, frames), fps=25, audio=True, preset="veryfast",
                     crf=18)


def _run_variant(variant: Variant, clip: Path, output: Path, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    from slimfuse.config import RunConfig
    from slimfuse.pipeline.run import build_run
    from slimfuse.pipeline.video import VideoSwapJob

    encode = EncodeSettings(preset="veryfast", quality=80)
    if not variant.swap:
        start = time.perf_counter()
        info = probe(clip)
        with VideoReader(clip, info=info) as reader, VideoWriter(output, info, encode) as writer:
            for frame in reader:
                writer.write(frame)
        seconds = time.perf_counter() - start
        queue.put(asdict(Row(variant.name, writer.frames_written, seconds, writer.frames_written / seconds,
                             peak_rss_mb(), None, None, None)))
        return
    config = RunConfig.from_options((sample_path("astronaut"),), reuse_threshold=variant.reuse_threshold,
                                    face_detector_interval=variant.detect_interval,
                                    temp_frame_format=variant.temp_format, temp_path=output.parent,
                                    output_video_preset=encode.preset, output_video_quality=encode.quality)
    start = time.perf_counter()
    result = VideoSwapJob(build_run(config, clip, notify=lambda message: None), clip, output).run_job()
    seconds = time.perf_counter() - start
    stats = result.stats
    frames_seconds = seconds - result.setup_seconds
    queue.put(asdict(Row(variant.name, result.frames_written, frames_seconds, result.frames_written / frames_seconds,
                         peak_rss_mb(), stats.detections_run, stats.generated, stats.reused, result.setup_seconds)))


def mean_psnr(a: Path, b: Path) -> float:
    values = []
    with av.open(str(a)) as first, av.open(str(b)) as second:
        for x, y in zip(first.decode(video=0), second.decode(video=0), strict=False):
            values.append(psnr(x.to_ndarray(format="rgb24"), y.to_ndarray(format="rgb24")))
    return statistics.mean(values)


def run(frames: int = 150, json_path: Path | None = None, plot_path: Path | None = None, rounds: int = 1,
        variants: tuple[Variant, ...] = VARIANTS) -> list[Row]:
    """Every variant once a round (the transcode first), each in a fresh process; with several rounds each row holds
    the medians, and its ratio is the median of the ratios to the same round's transcode. variants: the transcode
    first, then the default swap."""
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    measured: list[list[Row]] = [[] for _ in variants]
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-video-") as work:
        folder = Path(work)
        clip = make_bench_clip(folder, frames)
        outputs = [folder / f"out{index}.mp4" for index in range(len(variants))]
        for _ in range(rounds):
            for index, variant in enumerate(variants):
                measured[index].append(Row(**measure_in_fresh_process(_run_variant, variant, clip, outputs[index])))
        psnrs = [mean_psnr(outputs[1], output) if index > 1 else None for index, output in enumerate(outputs)]
    rows = [summarise(runs, measured[0], psnr) for runs, psnr in zip(measured, psnrs, strict=True)]
    print(markdown_table(rows, frames, rounds))
    if json_path is not None:
        json_path.write_text(json.dumps({"frames": frames, "size": SIZE, "rounds": rounds,
                                         "rows": [asdict(row) for row in rows]}, indent=2))
    if plot_path is not None:
        plot(rows, plot_path)
    return rows


def summarise(runs: list[Row], transcodes: list[Row], psnr_vs_default: float | None) -> Row:
    """One variant's runs as one row: median frames/s, seconds and setup, the largest peak RSS, and the median (and
    range) of each run's frame rate over the transcode's in the same round. This machine's speed drifts from run to
    run, so only ratios taken side by side mean much."""
    ratios = [run.fps / transcode.fps for run, transcode in zip(runs, transcodes, strict=True)]
    setups = [run.setup_seconds for run in runs if run.setup_seconds is not None]
    first = runs[0]
    return replace(first, seconds=statistics.median(run.seconds for run in runs),
                   fps=statistics.median(run.fps for run in runs),
                   peak_rss_mb=max(run.peak_rss_mb for run in runs),
                   setup_seconds=statistics.median(setups) if setups else None, psnr_vs_default=psnr_vs_default,
                   fps_ratio_vs_transcode=statistics.median(ratios),
                   fps_ratio_range=(min(ratios), max(ratios)) if len(ratios) > 1 else None)


def markdown_table(rows: list[Row], frames: int, rounds: int = 1) -> str:
    header = ["run", "frames/s", "x transcode", "peak RSS MB", "setup s", "detections", "generated", "reused",
              "PSNR vs default dB"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.variant, f"{row.fps:.1f}", _ratio(row), f"{row.peak_rss_mb:.0f}",
                 "" if row.setup_seconds is None else f"{row.setup_seconds:.2f}",
                 _maybe(row.detections), _maybe(row.generated), _maybe(row.reused),
                 "" if row.psnr_vs_default is None else f"{row.psnr_vs_default:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    each = "each run" if rounds == 1 else (f"medians of {rounds} rounds, every variant once a round (ratios to the same "
                                           "round's transcode, their range in brackets), each run")
    lines.append(f"\n{frames} frames of 1280x720 at 25 fps with audio; libx264 veryfast, quality 80; the mesh swapper; "
                 f"{each} in a fresh process; frames/s counts from the first frame (model loading and source preparation "
                 "are 'setup s').")
    return "\n".join(lines)


def _ratio(row: Row) -> str:
    text = f"{row.fps_ratio_vs_transcode:.2f}"
    if row.fps_ratio_range is not None and row.fps_ratio_vs_transcode != 1.0:
        text += f" ({row.fps_ratio_range[0]:.2f}-{row.fps_ratio_range[1]:.2f})"
    return text


def _maybe(value: int | None) -> str:
    return "" if value is None else str(value)


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 3.2))
    axes.barh([row.variant for row in rows], [row.fps for row in rows], color=["grey"] + ["C0"] * (len(rows) - 1))
    axes.invert_yaxis()
    axes.set_xlabel("frames per second (720p)")
    axes.set_title("slimfuse bench video")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)

"""`slimfuse bench image`: per-stage latency and peak memory of the image swap.

Each target size runs in a fresh process (spawned) so its peak RSS is its own. Stages are timed one by one
on the same inputs, `runs` times each, and the median is reported.
"""
from __future__ import annotations

import json
import multiprocessing
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from slimfuse.bench.fresh_process import measure_in_fresh_process
from slimfuse.memory.probe import peak_rss_mb
from slimfuse.config import RunConfig
from slimfuse.faces.analyse import MESH_MODEL
from slimfuse.faces.blazeface import SPECS
from slimfuse.faces.identity import IdentityModel
from slimfuse.media.image_io import compose_output, read_image, write_image_atomic
from slimfuse.samples import sample_path

STAGES = ("read", "detect", "landmarks", "identity", "swap", "blend", "write")
TARGETS = {"512px": (512, 512), "1080p": (1920, 1080)}


@dataclass(frozen=True)
class TargetResult:
    target: str
    width: int
    height: int
    model_load_ms: float
    stage_ms: dict[str, float]
    swap_total_ms: float
    """detect + landmarks + swap + blend: one face, models loaded, no file I/O."""
    peak_rss_mb: float


def make_target(name: str, folder: Path) -> Path:
    """The astronaut photo as a 512-px target, or centred on a 1920x1080 canvas at 2x."""
    photo = np.asarray(Image.open(sample_path("astronaut")).convert("RGB"))
    width, height = TARGETS[name]
    if (width, height) != photo.shape[1::-1]:
        scaled = cv2.resize(photo, (height, height), interpolation=cv2.INTER_CUBIC)
        canvas = np.full((height, width, 3), 96, dtype=np.uint8)
        left = (width - height) // 2
        canvas[:, left:left + height] = scaled
        photo = canvas
    path = folder / f"target_{name}.jpg"
    Image.fromarray(photo).save(path, quality=95)
    return path


def _median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure_target(name: str, runs: int) -> TargetResult:
    from slimfuse.pipeline.run import build_run
    from slimfuse.processors.blend import paste_back

    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-") as work:
        folder = Path(work)
        target_path = make_target(name, folder)
        output_path = folder / "out.jpg"
        config = RunConfig(sources=(sample_path("grace_hopper"),))
        start = time.perf_counter()
        run = build_run(config, target_path, notify=lambda message: None)
        pool = run.pool
        for model in run.plan.models:  # the analysis models, loaded before the clock stops
            if model in (SPECS["short"].model, SPECS["full"].model, MESH_MODEL):
                pool.session(model)
        identity = IdentityModel(pool)
        identity.models()
        model_load_ms = (time.perf_counter() - start) * 1000

        prepared = run.prepare(keep_identity=True)
        loaded = read_image(target_path)
        frame = loaded.rgb
        detector = run.analyser.detector()
        mesh = run.analyser.mesh()
        face = mesh.landmarks(frame, detector.detect(frame)[0])
        assert face is not None
        processor = run.chain.processors[0]
        crop = processor.crop(frame, face)
        processed = prepared[0].process([crop])[0]
        result = paste_back(frame, processed.image, processed.alpha, crop.crop_from_frame)
        output = compose_output(loaded, result)

        def swap_one() -> None:
            prepared[0].process([processor.crop(frame, face)])

        def whole() -> None:
            loop = run.loop(prepared)
            loop.render(frame, loop.analyse(frame, 0.0))

        stage_ms = {
            "read": _median_ms(lambda: read_image(target_path), runs),
            "detect": _median_ms(lambda: detector.detect(frame), runs),
            "landmarks": _median_ms(lambda: mesh.landmarks(frame, face), runs),
            "identity": _median_ms(lambda: identity.descriptor(frame, face), runs),
            "swap": _median_ms(swap_one, runs),
            "blend": _median_ms(lambda: paste_back(frame, processed.image, processed.alpha, crop.crop_from_frame), runs),
            "write": _median_ms(lambda: write_image_atomic(output, output_path), runs),
        }
        total = _median_ms(whole, runs)
    peak = peak_rss_mb()
    height, width = frame.shape[:2]
    return TargetResult(name, width, height, model_load_ms, stage_ms, total, peak)


def _child(name: str, runs: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put(asdict(measure_target(name, runs)))


def run(runs: int = 20, json_path: Path | None = None, plot_path: Path | None = None) -> list[TargetResult]:
    results = [TargetResult(**measure_in_fresh_process(_child, name, runs)) for name in TARGETS]
    print(markdown_table(results, runs))
    if json_path is not None:
        json_path.write_text(json.dumps([asdict(result) for result in results], indent=2))
    if plot_path is not None:
        plot(results, plot_path)
    return results


def plot(results: list[TargetResult], path: Path) -> None:
    """Horizontal bars of each stage's median latency, one group per target."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 3.5))
    height = 0.8 / len(results)
    for index, result in enumerate(results):
        positions = np.arange(len(STAGES)) + index * height
        axes.barh(positions, [result.stage_ms[stage] for stage in STAGES], height=height,
                  label=f"{result.target} (peak RSS {result.peak_rss_mb:.0f} MB)")
    axes.set_yticks(np.arange(len(STAGES)) + height * (len(results) - 1) / 2, STAGES)
    axes.invert_yaxis()
    axes.set_xlabel("median latency, ms")
    axes.set_title("slimfuse bench image")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def markdown_table(results: list[TargetResult], runs: int) -> str:
    header = ["target", *[f"{stage} ms" for stage in STAGES], "swap total ms", "model load ms", "peak RSS MB"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for result in results:
        cells = [f"{result.target} ({result.width}x{result.height})",
                 *[f"{result.stage_ms[stage]:.1f}" for stage in STAGES],
                 f"{result.swap_total_ms:.1f}", f"{result.model_load_ms:.0f}", f"{result.peak_rss_mb:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"\nMedians of {runs} runs; swap total = detect + landmarks + swap + blend for one face, models "
                 "loaded, no file I/O; each target in a fresh process.")
    return "\n".join(lines)

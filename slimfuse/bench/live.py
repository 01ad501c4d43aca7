"""`slimfuse bench live`: the live loop's processed frames/s, drops and in-process latency (a frame's arrival to
its output) at 640x480 and 1280x720, and a soak: RSS and latency p95 over a long session.

Each size plays a clip made from the packaged photos (a camera pan over Grace Hopper, 30 fps) in a loop at its own
rate through `LiveSession`, the astronaut's face swapped in with the mesh swapper, the ladder on; one run, one
process, models loaded once.

`--neural` adds a neural swapper (inswapper_128 and arcface_w600k_r50: the user's files, else stand-ins of the real
sizes with random weights) at 640x480: each step of the ladder held (a neural swapper keeps its model's face size,
so its steps differ in the detection interval), the ladder itself, and reuse of generated faces off and on, on the
pan and on a still camera (the same picture with fresh sensor grain in every frame).
"""
from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from slimfuse.bench.clips import make_clip, pan, still
from slimfuse.config import RunConfig
from slimfuse.live.inputs import InputOptions
from slimfuse.live.ladder import steps_for
from slimfuse.live.session import LiveOptions, LiveSession
from slimfuse.live.stats import Snapshot
from slimfuse.memory.probe import process_memory
from slimfuse.models.store import Store
from slimfuse.pipeline.run import Run, build_run
from slimfuse.samples import sample_path

SIZES = ((640, 480), (1280, 720))
# The goals: processed frames/s at least this, and in-process latency p95 at most this (ms; None: no aim).
GOALS: dict[tuple[int, int], tuple[float, float | None]] = {(640, 480): (30.0, 40.0), (1280, 720): (20.0, None)}
CLIP_FRAMES = 120
SETTLE_S = 60.0
"""The soak's first minute: RSS is compared against its end, and its latency against the last minute's."""
RSS_GROWTH = 0.05
NEURAL_MODELS = ("inswapper_128", "arcface_w600k_r50")
NEURAL_SIZE = (640, 480)
GRAIN = 2.0
"""The still camera's sensor noise (standard deviation, grey levels): no two frames are the same."""


@dataclass(frozen=True)
class Row:
    size: str
    seconds: float
    processed_fps: float
    input_frames: int
    dropped: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    processing_p50_ms: float | None
    final_step: str
    ladder_changes: int
    goal: str


@dataclass(frozen=True)
class Soak:
    seconds: float
    samples: list[tuple[float, float, float]]
    """(seconds since the start, RSS MB, latency p95 ms over the last frames)."""
    rss_after_first_minute_mb: float
    rss_end_mb: float
    p95_first_minute_ms: float
    p95_last_minute_ms: float
    verdict: str


@dataclass(frozen=True)
class NeuralRow:
    camera: str
    setting: str
    reuse: bool
    processed_fps: float
    dropped: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    processing_p50_ms: float | None
    generated: int
    reused: int
    final_step: str


def _photo() -> np.ndarray:
    return np.asarray(Image.open(sample_path("grace_hopper")).convert("RGB"))


def _clip(folder: Path, size: tuple[int, int]) -> Path:
    return make_clip(folder / f"camera_{size[0]}x{size[1]}.mp4", pan(_photo(), size, CLIP_FRAMES, face_px=size[1] / 3),
                     fps=30)


def _still_clip(folder: Path, size: tuple[int, int]) -> Path:
    rng = np.random.default_rng(0)
    frames = (np.clip(frame + rng.normal(0, GRAIN, frame.shape), 0, 255).astype(np.uint8)
              for frame in still(_photo(), size, CLIP_FRAMES, face_px=size[1] / 3))
    return make_clip(folder / f"still_{size[0]}x{size[1]}.mp4", frames, fps=30)


def _session(run: Run, clip: Path, seconds: float, status: Callable[[Snapshot, str], None] | None = None,
             every: float = 5.0) -> LiveSession:
    return LiveSession(run, str(clip), [], LiveOptions(duration=seconds, status_every=every),
                       InputOptions(loop=True), status=status)


def measure(run: Run, clip: Path, size: tuple[int, int], seconds: float) -> tuple[Row, np.ndarray]:
    session = _session(run, clip, seconds)
    result = session.run_session()
    latency = result.latency
    fps_goal, p95_goal = GOALS.get(size, (0.0, None))
    p95 = latency["latency_p95_ms"]
    met = result.fps >= fps_goal and (p95_goal is None or (p95 is not None and p95 <= p95_goal))
    aim = f">= {fps_goal:g} fps" + ("" if p95_goal is None else f", p95 <= {p95_goal:g} ms")
    row = Row(size=f"{size[0]}x{size[1]}", seconds=result.seconds, processed_fps=result.fps,
              input_frames=result.input_frames, dropped=result.dropped_input + result.dropped_output,
              latency_p50_ms=latency["latency_p50_ms"], latency_p95_ms=p95,
              processing_p50_ms=latency["processing_p50_ms"], final_step=result.final_step,
              ladder_changes=len(result.ladder), goal=f"{aim}: {'met' if met else 'missed'}")
    return row, session.stats.histogram.copy()


def neural(folder: Path, seconds: float, store: Store | None = None, width: float = 1.0
           ) -> tuple[list[NeuralRow], str]:
    """The neural rows (see the module doc), and which weights they ran: the user's files in `store`, else
    stand-ins (`width`: of the real sizes; smaller for tests)."""
    from slimfuse.bench import standins
    from slimfuse.bench.memory import weights_label

    store = store or Store(notify=lambda message: None)
    real = [name for name in NEURAL_MODELS if width == 1.0 and store.location(name).is_file()]
    models_dir = None
    if len(real) < len(NEURAL_MODELS):
        real = []
        models_dir = standins.ensure(store.home, NEURAL_MODELS, width)[NEURAL_MODELS[0]].parent
    cameras = {"pan": _clip(folder, NEURAL_SIZE), "still": _still_clip(folder, NEURAL_SIZE)}
    defaults = RunConfig.from_options([sample_path("astronaut")])
    interval = defaults.faces.face_detector_interval
    held = sorted({step.detect_interval for step in steps_for(defaults.swap.target_face_size, interval)})
    # (camera, detection interval or None for the ladder, reuse)
    plan: list[tuple[str, int | None, bool]] = [("pan", every, False) for every in held]
    plan += [("pan", interval, True), ("pan", None, True), ("still", interval, False), ("still", interval, True)]
    rows = []
    for camera, every, reuse in plan:
        options: dict[str, object] = {
            "face_swapper_model": NEURAL_MODELS[0], "face_recognizer_model": NEURAL_MODELS[1],
            "face_detector_interval": every or interval, "models_dir": models_dir}
        if not reuse:
            options["reuse_threshold"] = 0.0
        neural_run = build_run(RunConfig.from_options([sample_path("astronaut")], **options))
        try:
            session = LiveSession(neural_run, str(cameras[camera]), [],
                                  LiveOptions(duration=seconds, ladder=every is None), InputOptions(loop=True))
            result = session.run_session()
        finally:
            neural_run.close()
        latency = result.latency
        rows.append(NeuralRow(
            camera=camera, setting="ladder on" if every is None else f"detect every {every}", reuse=reuse,
            processed_fps=result.fps, dropped=result.dropped_input + result.dropped_output,
            latency_p50_ms=latency["latency_p50_ms"], latency_p95_ms=latency["latency_p95_ms"],
            processing_p50_ms=latency["processing_p50_ms"], generated=result.faces.get("generated", 0),
            reused=result.faces.get("reused", 0), final_step=result.final_step))
    return rows, weights_label(real, [name for name in NEURAL_MODELS if name not in real], width)


def soak(run: Run, clip: Path, seconds: float, every: float = 5.0) -> Soak:
    samples: list[tuple[float, float, float]] = []
    session: LiveSession

    def sample(snapshot: Snapshot, step: str) -> None:
        elapsed = time.perf_counter() - session.stats.started
        samples.append((elapsed, process_memory().rss_bytes / 2**20, snapshot.p95_ms))

    session = _session(run, clip, seconds, sample, every)
    session.run_session()
    settle = min(SETTLE_S, seconds / 4)
    first = [s for s in samples if s[0] <= settle] or samples[:1]
    last = [s for s in samples if s[0] >= samples[-1][0] - settle] or samples[-1:]
    rss_first, rss_end = first[-1][1], samples[-1][1]
    p95_first, p95_last = float(np.median([s[2] for s in first])), float(np.median([s[2] for s in last]))
    flat = rss_end <= rss_first * (1 + RSS_GROWTH)
    steady = p95_last <= p95_first * 1.1 + 2
    verdict = (f"RSS {rss_first:.0f} -> {rss_end:.0f} MB ({'flat' if flat else 'GREW'}, aim <= +5%); latency p95 "
               f"{p95_first:.1f} -> {p95_last:.1f} ms ({'steady' if steady else 'ROSE'})")
    return Soak(seconds, samples, rss_first, rss_end, p95_first, p95_last, verdict)


def run(seconds: float = 20.0, soak_seconds: float = 600.0, json_path: Path | None = None,
        plot_path: Path | None = None, soak_every: float = 5.0, with_neural: bool = False,
        neural_seconds: float = 30.0) -> tuple[list[Row], Soak | None]:
    run_ = build_run(RunConfig.from_options([sample_path("astronaut")]))
    rows: list[Row] = []
    histograms: dict[str, np.ndarray] = {}
    neural_rows: list[NeuralRow] = []
    weights = ""
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-live-") as folder:
        clips = {size: _clip(Path(folder), size) for size in SIZES}
        for size in SIZES:
            row, histogram = measure(run_, clips[size], size, seconds)
            rows.append(row)
            histograms[row.size] = histogram
        soaked = soak(run_, clips[SIZES[0]], soak_seconds, soak_every) if soak_seconds > 0 else None
        run_.close()
        if with_neural:
            neural_rows, weights = neural(Path(folder), neural_seconds)
    print(markdown_table(rows, seconds))
    if soaked is not None:
        print(f"\nsoak, {soaked.seconds:g} s at 640x480: {soaked.verdict}")
    if neural_rows:
        print("\n" + neural_table(neural_rows, neural_seconds, weights))
    if json_path is not None:
        json_path.write_text(json.dumps({"rows": [asdict(row) for row in rows],
                                         "soak": None if soaked is None else asdict(soaked),
                                         "neural": [asdict(row) for row in neural_rows], "neural_weights": weights,
                                         "histograms_ms": {name: h.tolist() for name, h in histograms.items()}}))
    if plot_path is not None:
        plot(histograms, soaked, plot_path)
    return rows, soaked


def markdown_table(rows: list[Row], seconds: float) -> str:
    header = ("size", "frames/s", "input frames", "dropped", "latency p50 ms", "latency p95 ms", "swap p50 ms",
              "ladder (final step, changes)", "goal")
    cells = [(row.size, f"{row.processed_fps:.1f}", row.input_frames, row.dropped, row.latency_p50_ms,
              row.latency_p95_ms, row.processing_p50_ms, f"{row.final_step}, {row.ladder_changes}", row.goal)
             for row in rows]
    return _markdown(header, cells, f"{seconds:g} s per size, a 30 fps clip looped at its own rate; the mesh swapper; "
                                    "latency from a frame's arrival (decoded) to its output, in 1-ms bins.")


def neural_table(rows: list[NeuralRow], seconds: float, weights: str) -> str:
    header = ("camera", "setting", "reuse", "frames/s", "dropped", "latency p50 ms", "latency p95 ms", "swap p50 ms",
              "faces generated / reused", "final step")
    cells = [(row.camera, row.setting, "on" if row.reuse else "off", f"{row.processed_fps:.2f}", row.dropped,
              row.latency_p50_ms, row.latency_p95_ms, row.processing_p50_ms, f"{row.generated} / {row.reused}",
              row.final_step) for row in rows]
    return _markdown(header, cells, f"{seconds:g} s per row at {NEURAL_SIZE[0]}x{NEURAL_SIZE[1]}, a 30 fps clip "
                                    f"looped at its own rate; {NEURAL_MODELS[0]} with {NEURAL_MODELS[1]} ({weights}), "
                                    "models loaded once per row.")


def _markdown(header: tuple[str, ...], cells: list[tuple[object, ...]], note: str) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in cells]
    return "\n".join([*lines, "", note])


def plot(histograms: dict[str, np.ndarray], soaked: Soak | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, 2 if soaked is not None else 1, figsize=(11, 4), squeeze=False)
    for name, histogram in histograms.items():
        top = int(np.flatnonzero(histogram)[-1]) + 2 if histogram.any() else 10
        axes[0][0].step(np.arange(top), histogram[:top] / max(1, histogram.sum()), where="post", label=name)
    axes[0][0].set(xlabel="latency, arrival to output (ms)", ylabel="share of frames", title="latency histogram")
    axes[0][0].legend()
    if soaked is not None:
        times = [s[0] / 60 for s in soaked.samples]
        axis = axes[0][1]
        axis.plot(times, [s[1] for s in soaked.samples], color="tab:blue")
        axis.set(xlabel="minutes", ylabel="RSS MB", title=f"soak, {soaked.seconds / 60:g} min at 640x480")
        twin = axis.twinx()
        twin.plot(times, [s[2] for s in soaked.samples], color="tab:orange")
        twin.set_ylabel("latency p95 ms (orange)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)

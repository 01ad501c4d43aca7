"""`slimfuse bench optimize`: the variants of the embedded models side by side: file size, latency, gate metric.

For FaceMesh (`face_landmark`) and BlazeFace short range (`face_detection_short_range`): the original, fp16,
int8 dynamic and int8 static variants are made afresh (in a temporary folder: the store is not touched), gated
against the original on the gate's calibration faces, and timed in one process on one real input each (a FaceMesh
crop, a letterboxed photo), one ONNX Runtime thread per session, the sessions taking turns run after run so that
machine noise falls on all of them alike; the median of `runs` runs is reported.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import onnx
import onnxruntime as ort

from slimfuse.bench import standins
from slimfuse.models.runtime import QUIET_LOG_SEVERITY
from slimfuse.models.store import Store
from slimfuse.optimize.build import OptimizeRequest, Workshop, gate_bytes, make_variant, resolve
from slimfuse.optimize.quantize import Calibrator, make_quantised

MODELS: tuple[str, ...] = ("face_landmark", "face_detection_short_range")
TECHNIQUES: tuple[str, ...] = ("fp16", "int8-dynamic", "int8")
LABELS = {"original": "original (fp32)", "fp16": "fp16", "int8-dynamic": "int8 dynamic", "int8": "int8 static"}


@dataclass(frozen=True)
class Row:
    model: str
    variant: str
    bytes: int
    size_ratio: float
    latency_ms: float
    speedup: float
    metric: str
    value: float | None
    threshold: float
    higher_is_better: bool
    verdict: str
    details: dict[str, float | int | str | None]


def measure(store: Store, runs: int = 50, models: tuple[str, ...] = MODELS,
            techniques: tuple[str, ...] = TECHNIQUES) -> list[Row]:
    shop = Workshop(store)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-optimize-") as work:
        for model in models:
            target = resolve(store, model, OptimizeRequest("fp16"))
            assert target.gate is not None
            paths = {"original": target.path}
            results = {}
            for technique in techniques:
                data, _ = make_variant(shop, target, OptimizeRequest(technique))
                results[technique] = gate_bytes(shop, target, technique, data, target.gate)
                paths[technique] = Path(work) / f"{model}.{technique}.onnx"
                paths[technique].write_bytes(data)
            feed = shop.subject(target, target.gate.metric, "gate").feeds()[0]
            latency = _latencies(paths, feed, runs)
            for variant, path in paths.items():
                size = path.stat().st_size
                result = results.get(variant)
                document = result.to_dict() if result is not None else None
                rows.append(Row(
                    model=model, variant=variant, bytes=size, size_ratio=size / paths["original"].stat().st_size,
                    latency_ms=latency[variant], speedup=latency["original"] / latency[variant],
                    metric=target.gate.metric, value=document["value"] if document else None,
                    threshold=target.gate.threshold, higher_is_better=target.gate.higher_is_better,
                    verdict=document["verdict"] if document else "-", details=document["details"] if document else {}))
    return rows


def _latencies(paths: dict[str, Path], feed: dict, runs: int) -> dict[str, float]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = QUIET_LOG_SEVERITY
    sessions = {name: ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                for name, path in paths.items()}
    for session in sessions.values():  # warm up: first runs allocate
        for _ in range(3):
            session.run(None, feed)
    times: dict[str, list[float]] = {name: [] for name in sessions}
    for _ in range(runs):
        for name, session in sessions.items():
            start = time.perf_counter()
            session.run(None, feed)
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def table(rows: list[Row], runs: int) -> str:
    header = ("model", "variant", "file KB", "x size", "latency ms", "x speed", "gate metric", "value", "threshold",
              "verdict", "details")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        relation = ">=" if row.higher_is_better else "<="
        value = "" if row.value is None else f"{row.value:.3f}"
        lines.append("| " + " | ".join([
            f"`{row.model}`", LABELS[row.variant], f"{row.bytes / 1000:.0f}", f"{row.size_ratio:.2f}",
            f"{row.latency_ms:.2f}", f"{row.speedup:.2f}", row.metric if row.value is not None else "",
            value, f"{relation} {row.threshold:g}" if row.value is not None else "", row.verdict,
            _details(row)]) + " |")
    samples = sorted({str(row.details.get("samples")) for row in rows if row.details.get("samples")})
    return "\n".join(lines) + (f"\n\nLatency: median of {runs} runs, one ONNX Runtime thread, CPU provider, every "
                               "variant of a model timed in turn in one process; gate on the packaged photos, "
                               f"augmented ({' / '.join(samples)} samples).")


def _details(row: Row) -> str:
    details = row.details
    if row.metric == "landmark_error_px" and "max_px" in details:
        return f"max {details['max_px']:.2f} px, p95 {details['p95_px']:.2f} px"
    if row.metric == "box_iou" and "recall" in details:
        return (f"recall {details['recall']:.2f}, precision {details['precision']:.2f}, "
                f"faces {details['original_faces']} / {details['variant_faces']}")
    return ""


def run(runs: int = 50, json_path: Path | None = None, store: Store | None = None) -> list[Row]:
    rows = measure(store or Store(notify=lambda message: None), runs)
    print(table(rows, runs))
    if json_path is not None:
        json_path.write_text(json.dumps({"runs": runs, "rows": [asdict(row) for row in rows]}, indent=1) + "\n",
                             encoding="utf-8")
    return rows


# Calibration memory --------------------------------------------------------------------------------------------

CALIBRATION_MODELS: tuple[str, ...] = ("inswapper_128", "arcface_w600k_r50", "gfpgan_1.4", "codeformer", "gpen_bfr_256",
                                       "gpen_bfr_512", "gpen_bfr_1024", "real_esrgan_x4")
"""The catalog's large models: `--calibration` makes the static int8 variant of each."""
CALIBRATORS: tuple[Calibrator, ...] = ("streamed", "onnxruntime")
CALIBRATION_LABELS = {"streamed": "slimfuse (run by run)", "onnxruntime": "onnxruntime's calibrator"}
EXTRA_STANDINS_VERSION = "2"
"""Bump when an architecture below changes: the cache folder is keyed by it."""
MEASURED_PROCESS = ("import sys; from slimfuse.bench.optimize import make_int8; "
                    "make_int8(sys.argv[1], sys.argv[2], sys.argv[3])")


@dataclass(frozen=True)
class CalibrationRow:
    model: str
    weights: str
    file_mb: float
    calibrator: str
    samples: int | None
    peak_rss_mb: float
    seconds: float
    """Wall time of the whole process: start, the calibration faces, the ranges, the quantiser."""
    sha256: str | None
    """Of the int8 variant: the same for both calibrators when their ranges are."""
    exit_code: int
    error: str | None = None


def measure_calibration(store: Store, models: Sequence[str] = CALIBRATION_MODELS,
                        calibrators: Sequence[Calibrator] = ("streamed",), width: float = 1.0,
                        notify: Callable[[str], None] = lambda message: None) -> list[CalibrationRow]:
    """Make the static int8 variant of each of `models` as `slimfuse optimize NAME --int8` makes it (without storing
    or gating it), once per calibrator, each in a fresh process measured from outside (slimfuse.bench.memory), in a
    private models home: the user's real file of a model where there is one, else a stand-in of its real size with
    random weights."""
    from slimfuse.bench import memory

    rows = []
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-calibration-") as work:
        folder = Path(work)
        home, _ = memory.private_home(folder / "home", store, width)
        weights = {name: _place(store, home, name, width) for name in models}
        for name in models:
            path = home / "models" / store.catalog.get(name).filename
            for calibrator in calibrators:
                result, log = folder / f"{name}.{calibrator}.json", folder / f"{name}.{calibrator}.log"
                measured = memory.measure([sys.executable, "-c", MEASURED_PROCESS, name, calibrator, str(result)],
                                          {**os.environ, "SLIMFUSE_HOME": str(home)}, log)
                made = json.loads(result.read_text(encoding="utf-8")) if result.is_file() else {}
                error = None if measured.exit_code == 0 else memory.last_line(log.read_text(encoding="utf-8"))
                rows.append(CalibrationRow(
                    model=name, weights=weights[name], file_mb=round(path.stat().st_size / 1e6, 1),
                    calibrator=calibrator, samples=made.get("samples"), peak_rss_mb=round(measured.peak_rss_mb, 1),
                    seconds=round(measured.seconds, 1), sha256=made.get("sha256"), exit_code=measured.exit_code,
                    error=error))
                notify(f"bench optimize --calibration: {name} ({calibrator}): peak {measured.peak_rss_mb:.0f} MB, "
                       f"{measured.seconds:.0f} s" + (f"; failed: {error}" if error else ""))
    return rows


def make_int8(name: str, calibrator: Calibrator, result: str) -> None:
    """The measured process: the static int8 variant of catalog model `name` in the store of $SLIMFUSE_HOME, made as
    `slimfuse optimize NAME --int8` makes it (build.make_variant), its ranges by `calibrator`; writes the number of
    calibration samples and the variant's sha256 to the JSON file `result`."""
    shop = Workshop(Store(notify=lambda message: None))
    target = resolve(shop.store, name, OptimizeRequest("int8"))
    assert target.gate is not None
    feeds = shop.subject(target, target.gate.metric, "calibrate").feeds()
    data, how = make_quantised(target.path, "int8", feeds, calibrator=calibrator)
    Path(result).write_text(json.dumps({"samples": how["calibration_samples"],
                                        "sha256": hashlib.sha256(data).hexdigest()}), encoding="utf-8")


def calibration_table(rows: Sequence[CalibrationRow]) -> str:
    header = ("model", "variant", "weights", "file MB", "calibration", "samples", "peak RSS MB", "seconds", "sha256")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        peak = f"{row.peak_rss_mb:.0f}" if row.exit_code == 0 else f"{row.peak_rss_mb:.0f} (failed: {row.error})"
        lines.append("| " + " | ".join([
            f"`{row.model}`", LABELS["int8"], row.weights, f"{row.file_mb:.0f}", CALIBRATION_LABELS[row.calibrator],
            str(row.samples or ""), peak, f"{row.seconds:.0f}", (row.sha256 or "")[:12]]) + " |")
    return "\n".join(lines) + ("\n\nEach row one fresh process (`slimfuse optimize NAME --int8` without storing or "
                               "gating): peak RSS of its process tree, wall time from start to exit.")


def run_calibration(models: Sequence[str] = CALIBRATION_MODELS, calibrators: Sequence[Calibrator] = ("streamed",),
                    json_path: Path | None = None, store: Store | None = None) -> list[CalibrationRow]:
    from slimfuse.log import notice

    rows = measure_calibration(store or Store(notify=lambda message: None), models, calibrators, notify=notice)
    print(calibration_table(rows))
    if json_path is not None:
        json_path.write_text(json.dumps({"rows": [asdict(row) for row in rows]}, indent=1) + "\n", encoding="utf-8")
    return rows


# Stand-ins of the large models slimfuse.bench.standins has none of ---------------------------------------------

def _place(store: Store, home: Path, name: str, width: float) -> str:
    """Put model `name` in private home `home` (the user's real file, linked, where there is one; else a stand-in,
    built once into the user's stand-in cache); returns which it is."""
    from slimfuse.bench import memory

    link = home / "models" / store.catalog.get(name).filename
    if width == 1.0 and store.location(name).is_file():
        memory._link(store.location(name), link)
        return standins.REAL_LABEL
    if name not in standins.MODELS:  # private_home placed those
        folder = standins.cache_dir(store.home, width) / f"calibration-v{EXTRA_STANDINS_VERSION}"
        path = folder / link.name
        if not path.is_file():
            _build_standin(name, path, width)
        memory._link(path, link)
    return standins.STANDIN_LABEL if width == 1.0 else f"stand-in (width {width:g})"


GPEN_CHANNELS = {4: 512, 8: 512, 16: 512, 32: 512, 64: 512, 128: 256, 256: 128, 512: 64, 1024: 32}
"""GPEN's channels per resolution (StyleGAN2's with channel multiplier 2); gpen_bfr_256 has half of each."""
GPEN_STYLE = 512
SEEDS = {"gpen_bfr_256": 256, "gpen_bfr_512": 512, "gpen_bfr_1024": 1024, "real_esrgan_x4": 4}


def gpen(size: int, width: float = 1.0) -> tuple[standins.Graph, list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """GPEN-BFR at `size` px: an encoder of strided convolutions down to 4 px and a linear layer to the style vector,
    StyleGAN2's 8-layer mapping network, and a decoder of modulated convolutions (two per resolution, and one to RGB)
    each of whose outputs is concatenated with the encoder's features of its resolution (GPEN's noise inputs)."""
    g = standins.Graph(f"gpen_bfr_{size}", width * (0.5 if size == 256 else 1.0))
    ch = {res: g.ch(channels) for res, channels in GPEN_CHANNELS.items() if res <= size}
    features = {size: g.lrelu(g.conv("input", 3, ch[size], kernel=1))}
    res = size
    while res > 4:
        features[res // 2] = g.lrelu(g.conv(features[res], ch[res], ch[res // 2], stride=2))
        res //= 2
    flat = ch[4] * 16
    style = g.linear(g.op("Flatten", [features[4]], axis=1), flat, GPEN_STYLE, 1.0 / math.sqrt(flat))
    for _ in range(8):
        style = g.lrelu(g.linear(style, GPEN_STYLE, GPEN_STYLE, standins.LEAK_GAIN / math.sqrt(GPEN_STYLE)))

    def styled(x: str, cin: int, res: int, upsample: bool = False) -> str:
        made = g.lrelu(standins._modconv(g, x, style, GPEN_STYLE, cin, ch[res]))
        # StyleGAN2 upsamples in a transposed convolution of the half-size input: here convolved, then enlarged (the
        # same tensor sizes; enlarging first held a 1024 px tensor of twice 64 channels)
        return g.op("Concat", [g.resize(made, 2.0) if upsample else made, features[res]], axis=1)

    out = styled(features[4], ch[4], 4)
    rgb = standins._modconv(g, out, style, GPEN_STYLE, 2 * ch[4], 3, kernel=1, gain=1.0)
    while res < size:
        res *= 2
        out = styled(styled(out, 2 * ch[res // 2], res, upsample=True), 2 * ch[res], res)
        layer_rgb = standins._modconv(g, out, style, GPEN_STYLE, 2 * ch[res], 3, kernel=1, gain=1.0)
        rgb = g.op("Add", [g.op("Mul", [g.resize(rgb, 2.0), g.const("fade", 0.7)]), layer_rgb])
    g.skip_residual("input", rgb, standins.ENHANCE_RESIDUAL, -1.0, 1.0, "output")
    return g, [_image("input", size)], [_image("output", size)]


def real_esrgan_x4(width: float = 1.0) -> tuple[standins.Graph, list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Real-ESRGAN x4's RRDBNet: 23 residual-in-residual dense blocks (three dense blocks of five convolutions each,
    64 features growing by 32) at the input's size, then two 2x upsamplings; any input size."""
    g = standins.Graph("real_esrgan_x4", width)
    features, grow = g.ch(64), g.ch(32)
    first = g.conv("input", 3, features, gain=1.0)
    body = first
    for _ in range(23):
        block_input = body
        for _ in range(3):
            dense = [body]
            for index in range(5):
                last = index == 4
                joined = dense[0] if len(dense) == 1 else g.op("Concat", dense, axis=1)
                made = g.conv(joined, features + index * grow, features if last else grow, gain=1.0 if last else
                              standins.LEAK_GAIN)
                dense.append(made if last else g.lrelu(made))
            body = g.op("Add", [g.op("Mul", [dense[-1], g.const("beta", 0.2)]), body])
        body = g.op("Add", [g.op("Mul", [body, g.const("beta", 0.2)]), block_input])
    out = g.op("Add", [first, g.conv(body, features, features, gain=1.0)])
    for _ in range(2):
        out = g.lrelu(g.conv(g.resize(out, 2.0), features, features))
    rgb = g.conv(g.lrelu(g.conv(out, features, features)), features, 3, gain=1.0)
    g.skip_residual(g.resize("input", 4.0), rgb, standins.SWAP_RESIDUAL, 0.0, 1.0, "output")
    value = onnx.helper.make_tensor_value_info
    return g, [value("input", onnx.TensorProto.FLOAT, ["batch", 3, "height", "width"])], \
        [value("output", onnx.TensorProto.FLOAT, ["batch", 3, "height_x4", "width_x4"])]


def _image(name: str, size: int) -> onnx.ValueInfoProto:
    return onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, ["batch", 3, size, size])


def _build_standin(name: str, path: Path, width: float) -> None:
    if name == "codeformer":
        _export_codeformer(path, width)
    elif name.startswith("gpen_bfr_"):
        standins.write(*gpen(int(name.removeprefix("gpen_bfr_")), width), path, SEEDS[name])
    elif name == "real_esrgan_x4":
        standins.write(*real_esrgan_x4(width), path, SEEDS[name])
    else:
        raise ValueError(f"no stand-in of {name}")


def _export_codeformer(path: Path, width: float) -> None:
    """The reference PyTorch CodeFormer (slimfuse.optimize.torch, the torch extra) with seeded random weights, as
    ONNX with the catalog entry's tensors."""
    from slimfuse.optimize.torch import require_torch

    require_torch()
    from slimfuse.optimize.torch.architectures import ARCHITECTURES
    from slimfuse.optimize.torch.export import export_onnx

    architecture = ARCHITECTURES["codeformer"]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    export_onnx(architecture, architecture.build(max(4, round(architecture.default_width * width))), partial)
    partial.replace(path)

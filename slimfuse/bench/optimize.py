"""`slimfuse bench optimize`: the variants of the embedded models side by side: file size, latency, gate metric.

For FaceMesh (`face_landmark`) and BlazeFace short range (`face_detection_short_range`): the original, fp16,
int8 dynamic and int8 static variants are made afresh (in a temporary folder: the store is not touched), gated
against the original on the gate's calibration faces, and timed in one process on one real input each (a FaceMesh
crop, a letterboxed photo), one ONNX Runtime thread per session, the sessions taking turns run after run so that
machine noise falls on all of them alike; the median of `runs` runs is reported.
"""
from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import onnxruntime as ort

from slimfuse.models.runtime import QUIET_LOG_SEVERITY
from slimfuse.models.store import Store
from slimfuse.optimize.build import OptimizeRequest, Workshop, gate_bytes, make_variant, resolve

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

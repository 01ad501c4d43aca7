"""`slimfuse optimize ARCH --report`: every technique on the same inputs in one run, side by side with the
unmodified float32 model: peak memory, median latency, and the gate metrics of the output (PSNR and SSIM against
the float32 model's, judged by the catalog entry's quality gate).

The report prepares the files once (the float32 weights, one file per segment, the pruned weights and their
pruning history) in a temporary folder, then measures each technique in a freshly spawned process
(slimfuse.optimize.torch.measure).
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from slimfuse.models.catalog import Catalog
from slimfuse.models.spec import KIND_GATES, GateSpec
from slimfuse.models.tensors import to_unit
from slimfuse.models.variants import FAIL, PASS
from slimfuse.optimize.metrics import psnr, ssim
from slimfuse.optimize.torch.architectures import ARCHITECTURES, Architecture
from slimfuse.optimize.torch.checkpoint import load_weights, save_weights
from slimfuse.optimize.torch.measure import CACHED, FP32, PRUNED, TECHNIQUES, Job, Measurement, Workspace, measure_apart
from slimfuse.optimize.torch.pruning import prune
from slimfuse.optimize.torch.segmented import write_segments

MB = 1 << 20


@dataclass(frozen=True)
class ReportOptions:
    width: int | None = None
    """Channel width of the architecture (None: its real size)."""
    size: int | None = None
    """Face crop size (None: the catalog entry's)."""
    device: str = "cpu"
    frames: int = 5
    """Timed calls (one frame each, after a warm-up call): the latency is their median."""
    prune_ratio: float = 0.3
    weights: Path | None = None
    """A checkpoint to load instead of the seeded random weights."""


@dataclass(frozen=True)
class ReportRow:
    architecture: str
    technique: str
    parameters: int
    weight_mb: float
    """Weights resident at once."""
    peak_mb: float
    latency_ms: float
    speedup: float
    """Baseline latency / this latency."""
    psnr_db: float | None
    ssim: float | None
    verdict: str
    """The catalog gate's verdict on the PSNR ("-" for the baseline)."""
    notes: str


def gate_of(architecture: Architecture) -> GateSpec:
    spec = Catalog().get(architecture.catalog_name)
    return spec.gate or KIND_GATES[spec.kind]


def has_attention(model: torch.nn.Module) -> bool:
    return any(hasattr(module, "keys_values") for module in model.modules())


def prepare(architecture: Architecture, options: ReportOptions, workspace: Workspace) -> tuple[str, ...]:
    """Write the files every technique loads from; returns the techniques that apply to the architecture."""
    model = architecture.build(options.width, size=options.size)
    if options.weights is not None:
        load_weights(model, options.weights)
    save_weights(model, workspace.weights)
    write_segments(model.segments(), workspace.segments)
    techniques = TECHNIQUES if has_attention(model) else tuple(name for name in TECHNIQUES if name != CACHED)
    history = prune(model, architecture.example_inputs(size=options.size), options.prune_ratio)  # the last use of `model`
    save_weights(model, workspace.pruned_weights)
    workspace.pruned_history.write_text(json.dumps(history), encoding="utf-8")
    return techniques


def _quality(architecture: Architecture, reference: Sequence[np.ndarray],
             outputs: Sequence[np.ndarray]) -> tuple[float, float]:
    """Mean PSNR and SSIM over the frames, on the outputs as images in [0, 1]."""
    low_high = architecture.io.output_range
    pairs = [(to_unit(ref, low_high)[0], to_unit(out, low_high)[0]) for ref, out in zip(reference, outputs, strict=True)]
    return (float(np.mean([psnr(ref, out) for ref, out in pairs])), float(np.mean([ssim(ref, out) for ref, out in pairs])))


def _row(architecture: Architecture, options: ReportOptions, measured: Measurement, baseline: Measurement) -> ReportRow:
    notes = measured.notes
    if measured.technique == PRUNED:
        removed = 1.0 - measured.parameters / baseline.parameters
        notes = f"{options.prune_ratio:.0%} of the parameters asked, {removed:.1%} removed (torch-pruning, L2 magnitude)"
    if measured is baseline:
        quality: tuple[float | None, float | None] = (None, None)
        verdict = "-"
    else:
        quality = _quality(architecture, baseline.outputs, measured.outputs)
        verdict = PASS if gate_of(architecture).passes(float(quality[0] or 0.0)) else FAIL
    return ReportRow(
        architecture=architecture.name, technique=measured.technique, parameters=measured.parameters,
        weight_mb=measured.weight_bytes / MB, peak_mb=measured.peak_bytes / MB, latency_ms=measured.latency_ms,
        speedup=baseline.latency_ms / measured.latency_ms, psnr_db=quality[0], ssim=quality[1], verdict=verdict,
        notes=notes)


def run_report(name: str, options: ReportOptions = ReportOptions(),
               notify: Callable[[str], None] = lambda message: None) -> list[ReportRow]:
    architecture = ARCHITECTURES[name]
    with tempfile.TemporaryDirectory(prefix="slimfuse-report-") as folder:
        workspace = Workspace.in_folder(Path(folder))
        notify(f"preparing {name} (weights, segments, {options.prune_ratio:.0%} pruning)")
        techniques = prepare(architecture, options, workspace)
        measured = []
        for technique in techniques:
            notify(f"measuring {name} {technique} on {options.device}")
            measured.append(measure_apart(Job(name, options.width, options.size, technique, options.device, options.frames,
                                              workspace)))
    baseline = next(measurement for measurement in measured if measurement.technique == FP32)
    return [_row(architecture, options, measurement, baseline) for measurement in measured]


def _number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def markdown(rows: Sequence[ReportRow], options: ReportOptions) -> str:
    """The report as a Markdown table, under one line saying what was run."""
    if not rows:
        return ""
    architecture = ARCHITECTURES[rows[0].architecture]
    gate = gate_of(architecture)
    relation = ">=" if gate.higher_is_better else "<="
    width = architecture.default_width if options.width is None else options.width
    size = options.size or architecture.size
    lines = [
        f"`{architecture.name}` ({architecture.catalog_name} I/O), width {width}, {size} px, {options.device}, torch "
        f"{torch.__version__}, median of {options.frames} calls",
        "",
        f"| technique | parameters (M) | weights MB | peak MB | latency ms | x speed | PSNR dB | SSIM | gate "
        f"(PSNR {relation} {gate.threshold:g}) | notes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.technique} | {row.parameters / 1e6:.2f} | {row.weight_mb:.1f} | {row.peak_mb:.1f} | "
            f"{row.latency_ms:.1f} | {row.speedup:.2f} | {_number(row.psnr_db, 1)} | {_number(row.ssim, 4)} | "
            f"{row.verdict} | {row.notes} |")
    return "\n".join(lines)


def rows_json(rows: Sequence[ReportRow]) -> str:
    return json.dumps([asdict(row) for row in rows], indent=1) + "\n"

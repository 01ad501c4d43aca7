"""`slimfuse optimize`: make a float16, int8 or ONNX Runtime-optimised variant of a model, gated against the
original on real faces; or, with --report, measure the PyTorch techniques on a reference architecture (the torch
extra)."""
from __future__ import annotations

import logging
import argparse
import json
from pathlib import Path

from slimfuse.cli.commands import HELP
from slimfuse.cli.common import add_common_options, make_store
from slimfuse.errors import GateFailedError, OutputDirMissingError, UsageError
from slimfuse.models.spec import METRICS

LOG = logging.getLogger(__name__)

REPORT_DEFAULTS = {"device": "cpu", "width": None, "size": None, "runs": 5, "prune_ratio": 0.3, "weights": None}
"""The options that go with --report only, and their defaults."""
ONNX_DEFAULTS = {"static": False, "dynamic": False, "ort_level": None, "keep_fp32": [], "gate": False, "force": False,
                 "metric": None, "threshold": None}
"""The options that make no sense with --report, and their defaults."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "optimize", help=HELP["optimize"],
        description="Make the fp16, int8 or ONNX Runtime-optimised variant of MODEL (a catalog name, stored beside "
        "the original as NAME.VARIANT, or an .onnx file, written beside it) and, with --gate, compare it with the "
        "original on real faces; a variant that fails is not stored unless --force. With --report, MODEL is a "
        "reference architecture (gfpgan, simswap, codeformer) and the PyTorch techniques are measured side by side.")
    parser.add_argument("model", metavar="MODEL", help="a catalog name (e.g. face_landmark) or the path of an .onnx "
                        "file; with --report: gfpgan, simswap or codeformer")
    technique = parser.add_mutually_exclusive_group(required=True)
    technique.add_argument("--fp16", action="store_true", help="float16 weights and compute, float32 inputs/outputs")
    technique.add_argument("--int8", action="store_true", help="int8 quantisation (static by default)")
    technique.add_argument("--ort-optimize", action="store_true", help="ONNX Runtime's offline-optimised graph")
    technique.add_argument("--report", action="store_true",
                           help="measure float32, autocast, pruned, segmented and cached-attention runs of the PyTorch "
                           "reference architecture MODEL (needs: pip install 'slimfuse[torch]')")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--static", action="store_true", help="with --int8: calibrated on face crops (default)")
    mode.add_argument("--dynamic", action="store_true", help="with --int8: activations quantised at run time")
    parser.add_argument("--ort-level", choices=["basic", "extended"], default=None,
                        help="with --ort-optimize: the optimisation level saved, basic (default) or extended "
                        "(both stay portable)")
    parser.add_argument("--keep-fp32", nargs="+", default=[], metavar="OP_OR_NODE",
                        help="with --fp16: operation types or node names also kept in float32")
    parser.add_argument("--gate", action="store_true", help="compare the variant with the original on real faces; "
                        "store it only if it passes")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="write the gate result to this JSON file (implies --gate)")
    parser.add_argument("--force", action="store_true", help="store a variant that fails its gate, marked failed")
    parser.add_argument("--metric", choices=list(METRICS), default=None,
                        help="the gate metric of an .onnx file the catalog does not know")
    parser.add_argument("--threshold", type=float, default=None, help="override the gate's threshold")
    report = parser.add_argument_group("--report options")
    report.add_argument("--device", choices=["cpu", "cuda"], default=REPORT_DEFAULTS["device"],
                        help="where the techniques run (default cpu)")
    report.add_argument("--width", type=_positive, default=REPORT_DEFAULTS["width"], metavar="N",
                        help="channel width of the architecture (default: its real size, 64)")
    report.add_argument("--size", type=_positive, default=REPORT_DEFAULTS["size"], metavar="PX",
                        help="face crop size, a multiple of 32 (default: the catalog entry's, 512 or 256)")
    report.add_argument("--runs", type=_positive, default=REPORT_DEFAULTS["runs"], metavar="N",
                        help="timed calls per technique, one video frame each, after a warm-up call (default 5)")
    report.add_argument("--prune-ratio", type=float, default=REPORT_DEFAULTS["prune_ratio"], metavar="R",
                        help="share of the parameters the pruned model loses (default 0.3)")
    report.add_argument("--weights", type=Path, default=REPORT_DEFAULTS["weights"], metavar="PATH",
                        help="a .safetensors, .pth or .pt checkpoint of the architecture (default: seeded random weights)")
    add_common_options(parser)
    parser.set_defaults(command=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def technique_of(args: argparse.Namespace) -> str:
    _check_report_options(args)
    if args.report:
        return "report"
    if not args.int8 and (args.static or args.dynamic):
        raise UsageError(detail="--static and --dynamic go with --int8")
    if args.keep_fp32 and not args.fp16:
        raise UsageError(detail="--keep-fp32 goes with --fp16")
    if args.ort_level is not None and not args.ort_optimize:
        raise UsageError(detail="--ort-level goes with --ort-optimize")
    if args.fp16:
        return "fp16"
    if args.int8:
        return "int8-dynamic" if args.dynamic else "int8"
    return "optimized"


def _check_report_options(args: argparse.Namespace) -> None:
    defaults, other = (ONNX_DEFAULTS, "--report") if args.report else (REPORT_DEFAULTS, "--fp16, --int8 or --ort-optimize")
    misplaced = [name for name, default in defaults.items() if getattr(args, name) != default]
    if misplaced:
        options = ", ".join("--" + name.replace("_", "-") for name in misplaced)
        raise UsageError(detail=f"{options} do{'es' if len(misplaced) == 1 else ''} not go with {other}")
    if args.report and not 0.0 <= args.prune_ratio < 1.0:
        raise UsageError(detail=f"--prune-ratio must be in [0, 1), not {args.prune_ratio}")
    if args.report and args.size is not None and args.size % 32:
        raise UsageError(detail=f"--size must be a multiple of 32, not {args.size}")


def report(args: argparse.Namespace) -> int:
    """`--report`: the techniques of slimfuse.optimize.torch measured on a reference architecture (torch imported only
    here, after the check that it is installed)."""
    from slimfuse.optimize.torch import require_torch

    require_torch()
    import torch

    from slimfuse.optimize.torch.architectures import ARCHITECTURES, architecture_named
    from slimfuse.optimize.torch.report import ReportOptions, markdown, rows_json, run_report

    architecture = architecture_named(args.model)
    if architecture is None:
        raise UsageError(detail=f"--report measures {', '.join(ARCHITECTURES)} (or their catalog names "
                         f"{', '.join(arch.catalog_name for arch in ARCHITECTURES.values())}), not {args.model}")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageError(detail="--device cuda: PyTorch sees no CUDA device (a CPU build, or no driver)")
    options = ReportOptions(width=args.width, size=args.size, device=args.device, frames=args.runs,
                            prune_ratio=args.prune_ratio, weights=args.weights)
    rows = run_report(architecture.name, options, make_store(args).notify)
    print(markdown(rows, options))
    if args.json is not None:
        args.json.write_text(rows_json(rows), encoding="utf-8")
    return 0


def run(args: argparse.Namespace) -> int:
    from slimfuse.optimize.build import OptimizeRequest, optimize

    technique = technique_of(args)
    if args.json is not None and not args.json.resolve().parent.is_dir():
        raise OutputDirMissingError(args.json.parent)
    if technique == "report":
        return report(args)
    store = make_store(args)
    request = OptimizeRequest(technique=technique, gate=args.gate or args.json is not None,
                              keep_fp32=tuple(args.keep_fp32), force=args.force, metric=args.metric,
                              threshold=args.threshold, ort_level=args.ort_level or "basic")
    outcome = optimize(store, args.model, request, store.notify)
    result = outcome.gate
    if args.json is not None and result is not None:
        document = {**result.to_dict(), "path": str(outcome.path), "stored": outcome.stored,
                    "original_bytes": outcome.original_size, "variant_bytes": outcome.variant_size,
                    "original_sha256": outcome.model.sha256, "sha256": outcome.record.sha256}
        args.json.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    if result is not None:
        store.notify(f"{result.summary()}")
    if result is not None and not result.passed:
        if not outcome.stored:
            raise GateFailedError(outcome.path, f"the {technique} variant of {outcome.model.name} failed its quality "
                                  f"gate ({result.metric} {result.value:.4g}, threshold {result.threshold:g}); "
                                  "not stored (--force stores it, marked failed)")
        LOG.warning(f"{outcome.path}: stored with --force although it failed its quality gate; "
                     "runs refuse to use it")
    elif result is None:
        when = "it is gated when a run first selects it" if outcome.model.in_store else "run again with --gate to check it"
        store.notify(f"{outcome.model.name}.{technique}: stored without its quality gate; {when}")
    print(outcome.path)
    return 0

"""`slimfuse optimize`: make a float16, int8 or ONNX Runtime-optimised variant of a model, gated against the
original on real faces."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from slimfuse.cli.common import add_common_options, make_store
from slimfuse.errors import GateFailedError, OutputDirMissingError, UsageError
from slimfuse.models.spec import METRICS


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "optimize", help="make a reduced-precision or quantised variant of a model, checked by a quality gate",
        description="Make the fp16, int8 or ONNX Runtime-optimised variant of MODEL (a catalog name, stored beside "
        "the original as NAME.VARIANT, or an .onnx file, written beside it) and, with --gate, compare it with the "
        "original on real faces; a variant that fails is not stored unless --force.")
    parser.add_argument("model", metavar="MODEL", help="a catalog name (e.g. face_landmark) or the path of an .onnx file")
    technique = parser.add_mutually_exclusive_group(required=True)
    technique.add_argument("--fp16", action="store_true", help="float16 weights and compute, float32 inputs/outputs")
    technique.add_argument("--int8", action="store_true", help="int8 quantisation (static by default)")
    technique.add_argument("--ort-optimize", action="store_true", help="ONNX Runtime's offline-optimised graph")
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
    add_common_options(parser)
    parser.set_defaults(command=run)


def technique_of(args: argparse.Namespace) -> str:
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


def run(args: argparse.Namespace) -> int:
    from slimfuse.optimize.build import OptimizeRequest, optimize

    technique = technique_of(args)
    if args.json is not None and not args.json.resolve().parent.is_dir():
        raise OutputDirMissingError(args.json.parent)
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
        store.notify(f"slimfuse: {result.summary()}")
    if result is not None and not result.passed:
        if not outcome.stored:
            raise GateFailedError(outcome.path, f"the {technique} variant of {outcome.model.name} failed its quality "
                                  f"gate ({result.metric} {result.value:.4g}, threshold {result.threshold:g}); "
                                  "not stored (--force stores it, marked failed)")
        store.notify(f"slimfuse: warning: {outcome.path}: stored with --force although it failed its quality gate; "
                     "runs refuse to use it")
    elif result is None:
        when = "it is gated when a run first selects it" if outcome.model.in_store else "run again with --gate to check it"
        store.notify(f"slimfuse: {outcome.model.name}.{technique}: stored without its quality gate; {when}")
    print(outcome.path)
    return 0

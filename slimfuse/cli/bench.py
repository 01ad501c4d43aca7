"""`slimfuse bench`: measured tables of speed and memory."""
from __future__ import annotations

import argparse
from pathlib import Path

from slimfuse.cli.common import add_common_options


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("bench", help="measure speed and memory")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    image = kinds.add_parser("image", help="per-stage latency and peak RSS of the image swap (512 px and 1080p)")
    image.add_argument("--runs", type=int, default=20, help="runs per stage; the median is reported")
    image.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    image.add_argument("--plot", type=Path, default=None, help="also draw the stage latencies to this PNG file")
    add_common_options(image)
    video = kinds.add_parser("video", help="720p video swap against a plain transcode, with memory and reuse")
    video.add_argument("--frames", type=int, default=150, help="length of the benchmark clip")
    video.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    video.add_argument("--plot", type=Path, default=None, help="also draw frames/s per run to this PNG file")
    add_common_options(video)
    optimize = kinds.add_parser("optimize", help="fp16 and int8 variants of the embedded models: size, latency, gate")
    optimize.add_argument("--runs", type=int, default=50, help="runs per variant; the median is reported")
    optimize.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    add_common_options(optimize)
    parser.set_defaults(command=run)


def run(args: argparse.Namespace) -> int:
    if args.kind == "optimize":
        from slimfuse.bench import optimize

        optimize.run(runs=args.runs, json_path=args.json)
        return 0
    if args.kind == "video":
        from slimfuse.bench import video

        video.run(frames=args.frames, json_path=args.json, plot_path=args.plot)
        return 0
    from slimfuse.bench import image

    image.run(runs=args.runs, json_path=args.json, plot_path=args.plot)
    return 0

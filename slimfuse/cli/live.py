"""`slimfuse live`: swap faces on a camera or a stream with a latency that never grows.

The swap options are `slimfuse swap`'s (same parser helpers, same RunConfig checks); the live options say where
frames come from and go to, the latency budget, and when to stop."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from functools import partial
from pathlib import Path

from slimfuse.cli.commands import HELP
from slimfuse.cli.common import add_common_options
from slimfuse.cli.options import add_command_options, add_run_options, config_from_args
from slimfuse.errors import UsageError

LOG = logging.getLogger(__name__)


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("live", help=HELP["live"], argument_default=argparse.SUPPRESS,
                                 description="Put the face of SOURCE onto the faces of a camera or stream, frame by "
                                 "frame, with at most one frame waiting between stages (newer frames replace older "
                                 "ones, which are counted as dropped).")
    parser.add_argument("-s", "--source", "--source-paths", dest="sources", type=Path, nargs="+",
                        metavar="SOURCE", help="one or more photos of the same person (needed when a stage puts "
                        "their face in: the face swapper)")
    live = parser.add_argument_group("live input and output")
    live.add_argument("--input", default="/dev/video0", metavar="DEV_OR_URL",
                      help="a camera (/dev/video0, default), a stream (udp://, rtsp://, http(s)://, rtmp://) or a "
                      "video file, played at its own rate")
    live.add_argument("--output", dest="outputs", nargs="+", default=[], metavar="URL_OR_DEV",
                      help="where swapped frames go: udp://HOST:PORT (MPEG-TS), rtmp://... (FLV), /dev/videoN "
                      "(a v4l2 loopback device) or a video file; several at once; none: only measure")
    live.add_argument("--input-size", type=_size, default=None, metavar="WxH", help="the camera's capture size")
    live.add_argument("--input-fps", type=float, default=None, metavar="FPS", help="the camera's capture rate")
    live.add_argument("--input-format", default="mjpeg", metavar="PIXFMT",
                      help="the camera's pixel format to ask for (default mjpeg)")
    live.add_argument("--input-timeout", type=float, default=5.0, metavar="S",
                      help="seconds without a frame before a stream counts as stopped (default 5)")
    live.add_argument("--input-loop", action="store_true", default=False,
                      help="a file input starts again at its end (demos, soak tests)")
    live.add_argument("--reconnect", type=_seconds, default=0.0, metavar="S",
                      help="a camera or stream that stops or ends is opened again for up to S seconds, the outputs "
                      "kept open (one line when lost, one when back; counted in the status line and the report); "
                      "default 0: the session ends with it (exit 34)")
    live.add_argument("--switch-source", dest="switch_sources", type=Path, action="append", default=[],
                      metavar="PHOTO", help="another person's photo to switch to while it runs (key f, in turn "
                      "after the -s photos); repeat for more")
    live.add_argument("--live-latency-budget-ms", type=float, default=1000 / 30, metavar="MS",
                      help="processing time a frame may take (default 33.3, for 30 fps); over it the run steps its "
                      "face size and then its detection interval down, and back up with headroom")
    live.add_argument("--live-ladder", action=argparse.BooleanOptionalAction, default=True,
                      help="step down and up under the latency budget (default on)")
    live.add_argument("--duration", type=float, default=None, metavar="S", help="stop after this many seconds")
    live.add_argument("--max-frames", type=int, default=None, metavar="N", help="stop after this many processed frames")
    add_run_options(parser, "live")
    add_command_options(parser, log_formats=False)
    add_common_options(parser, models_dir=False)
    parser.set_defaults(command=run, log_format="text")


def run(args: argparse.Namespace) -> int:
    from slimfuse.atomic import write_bytes_atomic
    from slimfuse.live.inputs import InputOptions
    from slimfuse.live.controls import Controls
    from slimfuse.live.keys import HELP, TerminalKeys
    from slimfuse.live.outputs import check_output, open_output
    from slimfuse.live.session import LiveOptions, LiveResult, LiveSession
    from slimfuse.live.stats import Snapshot, status_line
    from slimfuse.pipeline.run import SourceImage, build_run

    config = config_from_args(args)
    config.check_opaque()
    if "lip_syncer" in config.stages:
        raise UsageError(detail="--processors lip_syncer: not live (the mouth follows a sound along a video's "
                                "timeline; lip-sync a recorded video with slimfuse swap)")
    for spec in args.outputs:  # a file in a missing folder: before the camera and the models, not after the start
        check_output(spec)
    faces = [[SourceImage.read(path)] for path in args.switch_sources]  # a missing or unreadable photo: before any model
    options = LiveOptions(latency_budget_ms=args.live_latency_budget_ms, ladder=args.live_ladder,
                          duration=args.duration, max_frames=args.max_frames)
    inputs = InputOptions(size=args.input_size, fps=args.input_fps, camera_format=args.input_format,
                          timeout=args.input_timeout, loop=args.input_loop, reconnect=args.reconnect)
    factories = [partial(open_output, spec) for spec in args.outputs]
    terminal = sys.stderr.isatty()

    def show(snapshot: Snapshot, step: str) -> None:
        line = status_line(snapshot, step)
        print(f"\r{line}\x1b[K" if terminal else line, end="" if terminal else "\n", file=sys.stderr, flush=True)

    run_ = build_run(config)
    controls = Controls()
    session = LiveSession(run_, args.input, factories, options, inputs, controls, None if args.quiet else show, faces)
    result: LiveResult | None = None
    try:
        if not args.quiet and sys.stdin.isatty():
            LOG.info(HELP)
        with TerminalKeys(controls):
            result = session.run_session()
    finally:
        if terminal and not args.quiet:
            print(file=sys.stderr)
        if args.report is not None:
            data = session.result() if result is None else result
            report = {**data.to_dict(), "ok": result is not None and result.error is None,
                      "config": {key: _plain(value) for key, value in config.options().items()}}
            write_bytes_atomic(args.report, json.dumps(report, indent=2).encode())
        run_.close()
    if result.error is not None:
        raise result.error
    LOG.info(f"{args.input}: {result.ended}; {result.processed} frames swapped at {result.fps:.1f} fps, latency p50 "
             f"{result.latency['latency_p50_ms']} ms p95 {result.latency['latency_p95_ms']} ms, dropped "
             f"{result.dropped_input} in / {result.dropped_output} out"
             + (f", {result.reconnects} reconnect{'s' if result.reconnects != 1 else ''}" if result.reconnects else ""))
    return 0


def _plain(value: object) -> object:
    return value if isinstance(value, (bool, int, float, str, type(None))) else str(value)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size like 640x480: {text}") from None
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return width, height

"""`slimfuse swap`: put the source face onto the faces of a target image or video.

The parser only reads the command line: its options come from the option table (slimfuse.cli.options), and every
option given goes to `RunConfig.from_options`, which applies the profile and the defaults and checks the values
(the same checks the Python API gets); absent options are not in the namespace at all. The output is checked
before anything heavy is imported, so a wrong path is refused at once."""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

from slimfuse.cli.commands import HELP
from slimfuse.cli.common import add_common_options
from slimfuse.cli.options import add_batch_options, add_command_options, add_run_options, config_from_args
from slimfuse.cli.progress import Progress
from slimfuse.errors import OutputUnwritableError
from slimfuse.media.destination import check_output, is_video

LOG = logging.getLogger(__name__)


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("swap", help=HELP["swap"], argument_default=argparse.SUPPRESS,
                                 description="Put the face of SOURCE onto the faces of TARGET (an image or a video) "
                                 "and write OUTPUT.")
    parser.add_argument("-s", "--source", "--source-paths", dest="sources", type=Path, nargs="+",
                        metavar="SOURCE", help="one or more photos of the same person (needed when a stage puts "
                        "their face in: the face swapper)")
    parser.add_argument("-t", "--target", "--target-path", dest="target", type=Path, nargs="+", required=True,
                        help="the image (.jpg .jpeg .png .webp .bmp) or video (.mp4 .m4v .mov .mkv .webm .avi) whose "
                        "faces are replaced; several files, a folder or a glob make a batch (see slimfuse batch)")
    parser.add_argument("-o", "--output", "--output-path", dest="output", type=Path, required=True,
                        help="where to write the result; its type follows its extension (a folder for a batch)")
    add_run_options(parser, "swap")
    add_command_options(parser)
    add_batch_options(parser)
    add_common_options(parser, models_dir=False)
    parser.set_defaults(command=run)


def run(args: argparse.Namespace) -> int:
    from slimfuse.batch.items import names_many

    if names_many(args.target, args.output) or getattr(args, "workers", 1) > 1 or getattr(args, "ray", None):
        from slimfuse.cli.batch import run_targets

        return run_targets(args)
    args.target = args.target[0]
    config = config_from_args(args)
    config.check_alpha()
    check_output(args.output, args.target, config.inputs, alpha=config.transparent_output)
    from slimfuse.pipeline.jobs import swap_job  # heavy: only the swap itself needs it

    progress = Progress(total=None, quiet=args.quiet, log_format=args.log_format)
    result = swap_job(config, args.target, args.output, args.report, progress, make_variants=True)
    args.interrupts.output_complete()
    if args.report is not None and result.report_error is not None:
        raise OutputUnwritableError(args.report, f"cannot write the run report ({result.report_error})")
    summary = result.summary()
    if is_video(args.target):
        progress.finish(output=str(result.output), **summary)
    else:
        found, chosen = summary["faces_found"], summary["faces_swapped"]
        done = "swapped" if config.needs_source else "processed"  # a chain without the face swapper changes, not swaps
        if found:
            LOG.info(f"{args.target}: {found} face{'s' * (found != 1)} found, {chosen} {done}")
        else:  # a run without faces got here only with frame stages alone
            LOG.info(f"{args.target}: {', '.join(config.stages)} applied")
    print(result.output)
    return 0

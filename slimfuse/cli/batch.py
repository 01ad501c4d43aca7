"""`slimfuse batch MANIFEST` and the batch form of `slimfuse swap` (several targets, a folder, a glob, or a folder
output): many items with one set of models per worker, the resume journal, a progress line, a summary table and
the exit code 50 when any item failed."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from slimfuse.cli.commands import HELP
from slimfuse.cli.common import add_common_options
from slimfuse.cli.options import (RUN_OPTIONS, add_batch_options, add_command_options, add_run_options,
                                  config_from_args)

if TYPE_CHECKING:  # the batch package pulls in the pipeline: imported when a command runs
    from slimfuse.batch.items import BatchItem
    from slimfuse.batch.runner import BatchResult, ItemRow

LOG = logging.getLogger(__name__)
BAR_WIDTH = 24


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("batch", help=HELP["batch"],
                                 argument_default=argparse.SUPPRESS,
                                 description="Swap every item of MANIFEST: CSV with a header row (source or sources "
                                 "separated by ';', target, output, and any option names as columns) or JSON lines "
                                 "({\"sources\": [...], \"target\": ..., \"output\": ..., \"options\": {...}}). The "
                                 "options given here apply to every item; a row's own options win.")
    parser.add_argument("manifest", type=Path, metavar="MANIFEST")
    parser.add_argument("-o", "--output-dir", dest="output", type=Path, default=None,
                        help="relative outputs go here, and the journal (default: the manifest's folder)")
    add_run_options(parser, "swap")
    add_command_options(parser)
    add_batch_options(parser)
    add_common_options(parser, models_dir=False)
    parser.set_defaults(command=run, sources=())


def run(args: argparse.Namespace) -> int:
    from slimfuse.batch.items import read_manifest

    folder = args.output if args.output is not None else args.manifest.parent
    items = read_manifest(args.manifest, folder)
    return _run_items(args, items, folder)


def run_targets(args: argparse.Namespace) -> int:
    """`slimfuse swap -s FACE -t MANY... -o OUTDIR`, or one target with --workers / --ray."""
    from slimfuse.batch.items import BatchItem, items_from_targets, names_many
    from slimfuse.errors import OutputDirMissingError

    if names_many(args.target, args.output):
        if not args.output.is_dir():
            if not args.output.parent.is_dir():
                raise OutputDirMissingError(args.output, f"output directory {args.output.parent} does not exist")
            args.output.mkdir()
        items = items_from_targets(args.sources, args.target, args.output)
        return _run_items(args, items, args.output)
    item = BatchItem(tuple(args.sources), args.target[0], args.output)
    return _run_items(args, [item], args.output.parent if str(args.output.parent) else Path("."))


def _run_items(args: argparse.Namespace, items: list[BatchItem], journal_dir: Path) -> int:
    from slimfuse.batch.runner import BatchRunner, fit_workers, make_pool
    from slimfuse.errors import BatchItemsFailedError, UsageError

    options = {name: value for name, value in vars(args).items() if name in RUN_OPTIONS}
    config = config_from_args(argparse.Namespace(**{**vars(args), "sources": items[0].sources}))
    asked = getattr(args, "workers", 1)
    if asked < 1:
        raise UsageError(detail=f"argument --workers: must be at least 1, got {asked}; see {args.help_prog} --help")
    ray = getattr(args, "ray", None)
    workers = fit_workers(config, items[0].target, asked if ray is None or asked > 1 else 2, LOG.info)
    progress = BatchBar(quiet=args.quiet, log_format=args.log_format)
    pool = make_pool(workers, ray, progress.frames, config.runtime.execution_device_ids)
    try:
        result = BatchRunner(items, options, journal_dir, pool, progress, LOG.info,
                             halt_on_error=config.program.halt_on_error).run()
    finally:
        pool.close()
    progress.clear()
    print_summary(result, sys.stderr)
    for row in result.rows:
        if row.has_output:
            print(row.output)
    if args.report is not None:
        from slimfuse.atomic import write_bytes_atomic

        write_bytes_atomic(args.report, json.dumps(report_of(result), indent=2).encode())
    if result.failed:
        raise BatchItemsFailedError(detail=f"{len(result.failed)} of {len(result.rows)} items failed")
    return 0


def report_of(result: BatchResult) -> dict[str, object]:
    return {"ok": not result.failed, "counts": result.counts(), "seconds": round(result.seconds, 3),
            "workers": result.workers, "items": [asdict(row) for row in result.rows]}


def print_summary(result: BatchResult, stream: TextIO) -> None:
    """A row per item (done, skipped, failed with its one-line reason), then the counts."""
    lines = ["| status | target | output | s | note |", "|---|---|---|---|---|"]
    for row in result.rows:
        note = row.reason or (f"{row.segments} segments, join {row.join}" if row.segments else "")
        lines.append(f"| {row.status} | {row.target} | {row.output} | {row.seconds:.2f} | {note} |")
    counts = result.counts()
    lines.append(f"{counts['done']} done, {counts['skipped']} skipped, {counts['failed']} failed in "
                 f"{result.seconds:.1f} s with {result.workers} worker{'s' * (result.workers != 1)}")
    print("\n".join(lines), file=stream, flush=True)


class BatchBar:
    """The batch's bar and the current item's frames, on one line of a terminal; JSON lines with
    --log-format json (an event per item finished); nothing otherwise."""

    def __init__(self, quiet: bool, log_format: str, stream: TextIO | None = None) -> None:
        self.quiet, self.log_format = quiet, log_format
        self.stream = stream or sys.stderr
        self.total = self.done = 0
        self.frame_text = ""

    def started(self, total: int) -> None:
        self.total = total
        self._draw()

    def frames(self, done: int, total: int | None) -> None:
        self.frame_text = f" {done}/{total} frames" if total else f" {done} frames"
        if done % 10 == 0 or done == total:
            self._draw()

    def finished(self, row: ItemRow) -> None:
        self.done += 1
        self.frame_text = ""
        if self.log_format == "json":
            print(json.dumps({"event": "item", **asdict(row)}), file=self.stream, flush=True)
        self._draw()

    def clear(self) -> None:
        if self._drawing():
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _drawing(self) -> bool:
        return not self.quiet and self.log_format == "text" and self.stream.isatty()

    def _draw(self) -> None:
        if not self._drawing():
            return
        filled = BAR_WIDTH * self.done // max(1, self.total)
        self.stream.write(f"\r\033[K[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} items"
                          f"{self.frame_text}")
        self.stream.flush()

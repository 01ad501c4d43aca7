"""The `slimfuse` command: one sub-command per module of this package."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from slimfuse.cli import bench, doctor, models, optimize, serve, swap
from slimfuse.cli.common import run_guarded
from slimfuse.errors import Terminated


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="slimfuse", description="Swap faces within the memory you have.")
    commands = parser.add_subparsers(dest="name", required=True, metavar="COMMAND")
    for module in (swap, models, bench, optimize, doctor, serve):
        module.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with terminate_like_ctrl_c():
        return run_guarded(args.command, args)


@contextmanager
def terminate_like_ctrl_c() -> Iterator[None]:
    """While a command runs, SIGTERM (what `kill`, systemd and container runtimes send) cleans up as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())

"""The `slimfuse` command: one sub-command per module of this package."""
from __future__ import annotations

import argparse
import sys

from slimfuse.cli import bench, doctor, models, optimize, swap
from slimfuse.cli.common import run_guarded


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="slimfuse", description="Swap faces within the memory you have.")
    commands = parser.add_subparsers(dest="name", required=True, metavar="COMMAND")
    for module in (swap, models, bench, optimize, doctor):
        module.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_guarded(args.command, args)


if __name__ == "__main__":
    sys.exit(main())

"""The `slimfuse` command: one sub-command per module of this package.

Only the standard library is imported up here: the signal handling is installed before the sub-commands pull in
numpy, onnxruntime and PyAV (see slimfuse.cli.interrupt).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from slimfuse.cli.interrupt import Interrupts
from slimfuse.errors import UsageError


class Parser(argparse.ArgumentParser):
    """A usage error is one line: the option, what it allows, and where the help is (not the whole usage block)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(detail=f"{message}; see {self.prog} --help")

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if not hasattr(parsed, "help_prog"):  # the innermost sub-command parses first
            parsed.help_prog = self.prog
        return parsed, extras

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:  # named against the sub-command they were given to, not the top-level command
            raise UsageError(detail=f"unrecognized arguments: {' '.join(extras)}; see {parsed.help_prog} --help")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    from slimfuse.cli import batch, bench, doctor, live, models, optimize, serve, swap

    parser = Parser(prog="slimfuse", description="Swap faces in images and videos within the memory you have.")
    commands: Any = parser.add_subparsers(dest="name", required=True, metavar="COMMAND")
    for module in (swap, batch, live, models, bench, optimize, doctor, serve):
        module.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `slimfuse` command line. Without `argv` (the console script, `python -m slimfuse`) it is the whole
    process, and its signal handling stays until the process ends; a caller passing `argv` gets its own back."""
    interrupts = Interrupts().install()  # first, before the heavy imports
    try:
        code = _run(argv, interrupts)
    finally:
        if argv is not None:
            interrupts.restore()
    if argv is None:
        interrupts.done()
    return code


def _run(argv: list[str] | None, interrupts: Interrupts) -> int:
    from slimfuse.cli.common import flush_stdout, run_guarded, say

    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        return say(exc)
    args.interrupts = interrupts  # a command whose output is complete says so (Interrupts.output_complete)
    code = run_guarded(args.command, args, interrupts)
    closed = flush_stdout()
    return code if closed is None else closed


if __name__ == "__main__":
    sys.exit(main())

"""The `slimfuse` command: one sub-command per module of this package.

Only the standard library is imported up here: the signal handling is installed before the sub-commands pull in
numpy, onnxruntime and PyAV (see slimfuse.cli.interrupt).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from slimfuse.cli.commands import HELP
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


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `argv`, only the command it names is built in full (the others are listed with
    their help), so its module alone is imported."""
    parser = Parser(prog="slimfuse", description="Swap faces in images and videos within the memory you have.")
    commands: Any = parser.add_subparsers(dest="name", required=True, metavar="COMMAND")
    chosen = None if argv is None else next((word for word in argv if not word.startswith("-")), "")
    for name, help in HELP.items():
        if chosen is None or name == chosen:
            importlib.import_module(f"slimfuse.cli.{name}").add_parser(commands)
        else:
            commands.add_parser(name, help=help)
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
        words = sys.argv[1:] if argv is None else argv
        args = build_parser(words).parse_args(words)
    except UsageError as exc:
        return say(exc)
    args.interrupts = interrupts  # a command whose output is complete says so (Interrupts.output_complete)
    code = run_guarded(args.command, args, interrupts)
    closed = flush_stdout()
    return code if closed is None else closed


if __name__ == "__main__":
    sys.exit(main())

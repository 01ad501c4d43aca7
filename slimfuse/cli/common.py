"""What every command shares: the common options, and turning errors into one line and an exit code."""
from __future__ import annotations

import argparse
import json
import logging
import os
import select
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from slimfuse.cli.interrupt import Interrupts, stopped_by
from slimfuse.errors import PIPE_CLOSED_EXIT, SlimfuseError, Terminated

if TYPE_CHECKING:  # the store pulls in the model code: imported when a command runs
    from slimfuse.models.store import Store


def add_common_options(parser: argparse.ArgumentParser, models_dir: bool = True) -> None:
    """--debug and --quiet, and --models-dir for the commands that do not take the run's options (which have it)."""
    if models_dir:
        parser.add_argument("--models-dir", type=Path, default=None,
                            help="a folder searched first for model files (placed by hand)")
    parser.add_argument("--debug", action="store_true", default=False, help="show the traceback of an error")
    parser.add_argument("--quiet", action="store_true", default=False, help="print only results and errors")


def make_store(args: argparse.Namespace) -> Store:
    from slimfuse.models.store import Store, default_home

    return Store(home=default_home(), models_dir=args.models_dir)


class StderrHandler(logging.Handler):
    """The command line's one log handler: a line per message on the current stderr (looked up at each message, so
    a redirected stderr is honoured), `slimfuse: ` before a notice and `slimfuse: warning: ` before a warning, or
    JSON lines (`{"event": "log", "level": ..., "message": ...}`) with --log-format json."""

    def __init__(self, log_format: str) -> None:
        super().__init__()
        self.log_format = log_format

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.log_format == "json":
            line = json.dumps({"event": "log", "level": record.levelname.lower(), "message": message})
        elif record.levelno >= logging.WARNING:
            line = f"slimfuse: warning: {message}"
        else:
            line = f"slimfuse: {message}"
        print(line, file=sys.stderr, flush=True)


LOG_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}
"""--log-level's words (FaceFusion's) and the logging levels they show."""


def configure_logging(quiet: bool, log_format: str = "text", level: str | None = None) -> None:
    """Show slimfuse's messages on stderr: notices and warnings; --quiet keeps the warnings only; --log-level
    (error, warn, info, debug) says which, --quiet or not."""
    log = logging.getLogger("slimfuse")
    log.handlers = [StderrHandler(log_format)]
    log.setLevel(LOG_LEVELS[level] if level is not None else logging.WARNING if quiet else logging.INFO)
    log.propagate = False


def run_guarded(command: Callable[[argparse.Namespace], int], args: argparse.Namespace,
                interrupts: Interrupts | None = None) -> int:
    """Run a command; errors become `slimfuse: <one line>` and their documented exit code. Once a signal arrived,
    whatever error it turned into (an interrupted import is an ImportError) is reported as the signal."""
    interrupts = interrupts or Interrupts()
    configure_logging(getattr(args, "quiet", False), getattr(args, "log_format", "text"))
    try:
        with interrupts.working():
            read = None
            if getattr(args, "config_path", None) is not None:
                from slimfuse.cli.options import apply_config_file

                read = apply_config_file(args)  # its values may set the log level too
            level = getattr(args, "log_level", None)
            if level is not None:
                args.quiet = args.quiet or level in ("error", "warn")  # FaceFusion's quiet levels hide the progress
                configure_logging(args.quiet, getattr(args, "log_format", "text"), level)
            if read is not None:
                read.warn_unused()
            return command(args)
    except (Exception, KeyboardInterrupt) as exc:  # the last line of defence: one line, not a traceback
        if isinstance(exc, BrokenPipeError) and interrupts.received is None and stdout_closed():
            return quiet_on_closed_stdout()
        if args.debug:
            traceback.print_exception(exc, file=sys.stderr)
        return say(_user_error(exc, interrupts.received))


def say(error: SlimfuseError) -> int:
    """Print an error's one line; its exit code."""
    print(f"slimfuse: {error.message}", file=sys.stderr, flush=True)
    return error.exit_code


def _user_error(exc: BaseException, received: int | None) -> SlimfuseError:
    if received is not None:
        return stopped_by(received)
    if isinstance(exc, SlimfuseError):
        return exc
    if isinstance(exc, KeyboardInterrupt):
        return stopped_by(signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
    if isinstance(exc, MemoryError):
        return SlimfuseError(detail="out of memory (try a smaller --target-face-size)")
    return SlimfuseError(detail=f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)")


def flush_stdout() -> int | None:
    """Flush what the command printed; PIPE_CLOSED_EXIT where the reader has gone (`slimfuse models list | head`)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return quiet_on_closed_stdout()
    return None


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reading end is closed (the error comes from there, not from another pipe)."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def quiet_on_closed_stdout() -> int:
    """End quietly, as other command-line tools do when their reader goes away: stdout goes to /dev/null, so the
    interpreter's last flush finds nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return PIPE_CLOSED_EXIT

"""What every command shares: the common options, and turning errors into one line and an exit code."""
from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from slimfuse.errors import InterruptedByUser, SlimfuseError, Terminated, TerminatedBySignal
from slimfuse.models.store import Store, default_home


def add_common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models-dir", type=Path, default=None,
                        help="a folder searched first for model files (placed by hand)")
    parser.add_argument("--debug", action="store_true", default=False, help="show the traceback of an error")
    parser.add_argument("--quiet", action="store_true", default=False, help="print only results and errors")


def make_store(args: argparse.Namespace) -> Store:
    quiet = getattr(args, "quiet", False)
    return Store(home=default_home(), models_dir=args.models_dir, notify=notifier(quiet))


def notifier(quiet: bool) -> Callable[[str], None]:
    def notify(message: str) -> None:
        if not quiet or "warning" in message or "failed" in message:
            print(message, file=sys.stderr, flush=True)

    return notify


def run_guarded(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command; errors become `slimfuse: <one line>` and their documented exit code."""
    try:
        return command(args)
    except SlimfuseError as exc:
        return _report(exc, exc.exit_code, exc.message, args.debug)
    except KeyboardInterrupt as exc:
        stopped: SlimfuseError = InterruptedByUser(detail="interrupted; no output was written")
        if isinstance(exc, Terminated):
            stopped = TerminatedBySignal(detail="terminated (SIGTERM); no output was written")
        return _report(exc, stopped.exit_code, stopped.message, args.debug)
    except MemoryError as exc:
        return _report(exc, 1, "out of memory (try a smaller --target-face-size)", args.debug)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        return _report(exc, 1, f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)",
                       args.debug)


def _report(exc: BaseException, code: int, message: str, debug: bool) -> int:
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"slimfuse: {message}", file=sys.stderr, flush=True)
    return code

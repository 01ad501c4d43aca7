"""Ctrl-C and SIGTERM at any moment of a command: one line on stderr and exit 130 / 143, never a traceback.

`Interrupts` is installed first thing, before the heavy imports (numpy, onnxruntime, PyAV), and replaces whatever
handling the process inherited: a shell script or `nohup cmd &` starts its children with SIGINT ignored, and
slimfuse must still stop on Ctrl-C. What a signal does depends on the moment:

- starting (imports, parsing): nothing exists yet to clean up, so the process ends at once; an interrupt raised
  inside a library's import would come out as that library's error (numpy's "import numpy failed");
- working (the command itself): the first signal raises KeyboardInterrupt (SIGTERM: `Terminated`), so every clean-up
  Ctrl-C runs (temporary files, partial outputs) runs; a second one ends the process at once;
- finishing (the command is over, its one line is being printed): the signal is ignored and the process ends as
  it was going to;
- done (the console script after the command, while the interpreter shuts down): both signals are ignored, so the
  process ends with the command's own exit code; its output is complete and its stdout flushed. (Python puts back
  the default handling, death by the signal, late in its shutdown, for every signal it handles but not for an
  ignored one.)
"""
from __future__ import annotations

import enum
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from slimfuse.errors import InterruptedByUser, SlimfuseError, Terminated, TerminatedBySignal

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Phase(enum.Enum):
    STARTING = "starting"
    WORKING = "working"
    FINISHING = "finishing"
    DONE = "done"


def stopped_by(signum: int) -> SlimfuseError:
    """The error a signal is reported as."""
    if signum == signal.SIGTERM:
        return TerminatedBySignal(detail="terminated (SIGTERM); no output was written")
    return InterruptedByUser(detail="interrupted; no output was written")


@dataclass
class Interrupts:
    """The signal handling of one command, from its first line to the end of the process."""

    phase: Phase = Phase.STARTING
    received: int | None = None
    """The first signal received while the command worked (any error it turned into is reported as the signal)."""
    _previous: dict[int, Any] = field(default_factory=dict)

    def install(self) -> Interrupts:
        """Take SIGINT and SIGTERM over (only the main thread can; elsewhere the caller's handling stays)."""
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def restore(self) -> None:
        """Give the handling back to what it was before `install` (for callers of `main(argv)` in a process of
        their own)."""
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    @contextmanager
    def working(self) -> Iterator[None]:
        """While the command runs, a signal raises, so that its clean-up runs."""
        self.phase = Phase.WORKING
        try:
            yield
        finally:
            self.phase = Phase.FINISHING

    def output_complete(self) -> None:
        """The command's output stands whole under its final name: a signal from now on is ignored (reporting "no
        output was written" would be wrong, and undoing it would lose finished work)."""
        if self.phase is Phase.WORKING:
            self.phase = Phase.FINISHING

    def done(self) -> None:
        """The command is over and its output flushed: the process ignores the signals while it exits."""
        self.phase = Phase.DONE
        if self._previous:
            for signum in SIGNALS:
                signal.signal(signum, signal.SIG_IGN)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.phase in (Phase.FINISHING, Phase.DONE):
            return
        if self.phase is Phase.WORKING and self.received is None:
            self.received = signum
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        _end_now(stopped_by(self.received or signum))


def _end_now(error: SlimfuseError) -> None:
    """Print the one line and end the process without unwinding (a raw write: the signal may have arrived inside
    a write to sys.stderr)."""
    try:
        os.write(sys.stderr.fileno(), f"slimfuse: {error.message}\n".encode())
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(error.exit_code)

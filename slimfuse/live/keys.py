"""Keys in the terminal while a live session runs: s swap on/off, v selector one/many, q quit. Read from stdin in
cbreak mode (each key at once, without Enter) on a thread of its own; the terminal's settings come back on exit."""
from __future__ import annotations

import os
import select
import sys
import termios
import threading
import tty
from types import TracebackType

from slimfuse.live.session import Controls

HELP = "keys: s swap on/off, v selector one/many, q quit"


def apply_key(key: str, controls: Controls) -> None:
    if key == "s":
        controls.swap = not controls.swap
    elif key == "v":
        controls.selector_mode = "many" if controls.selector_mode == "one" else "one"
    elif key == "q":
        controls.stop.set()


class TerminalKeys:
    """Active only when stdin is a terminal; otherwise does nothing."""

    def __init__(self, controls: Controls) -> None:
        self.controls = controls
        self._saved: list[object] | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, name="slimfuse-live-keys", daemon=True)

    def __enter__(self) -> TerminalKeys:
        if sys.stdin.isatty():
            self._saved = termios.tcgetattr(sys.stdin.fileno())
            tty.setcbreak(sys.stdin.fileno())
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._done.set()
        if self._saved is not None:
            self._thread.join()
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved)

    def _read(self) -> None:
        descriptor = sys.stdin.fileno()
        while not self._done.is_set():
            ready, _, _ = select.select([descriptor], [], [], 0.2)
            if ready:
                apply_key(os.read(descriptor, 1).decode(errors="ignore").lower(), self.controls)

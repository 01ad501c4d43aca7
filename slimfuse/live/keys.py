"""Keys in the terminal while a live session runs (HELP lists them). Read from stdin in cbreak mode (each key at
once, without Enter) on a thread of its own; the terminal's settings come back on exit."""
from __future__ import annotations

import os
import select
import sys
import termios
import threading
import tty
from collections.abc import Callable, Mapping
from types import MappingProxyType, TracebackType

from slimfuse.live.controls import Controls

HELP = ("keys: s swap on/off, f next source face, m keep the target's mouth on/off, e face enhancer on/off, "
        "d face debugger on/off, v selector one/many, q quit")


KEYS: Mapping[str, Callable[[Controls], None]] = MappingProxyType({
    "s": Controls.toggle_swap,
    "f": Controls.next_face,
    "m": Controls.toggle_mouth,
    "e": Controls.toggle_enhancer,
    "d": Controls.toggle_debugger,
    "v": Controls.toggle_selector_mode,
    "q": lambda controls: controls.stop.set(),
})


def apply_key(key: str, controls: Controls) -> None:
    action = KEYS.get(key)
    if action is not None:
        action(controls)


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

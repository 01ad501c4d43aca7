"""Live inputs: a camera, a network stream or a file, decoded by PyAV on a thread of their own, each frame
offered to a LatestSlot as it arrives (a file at its own rate, as a camera would give it).

A source that stops (a camera unplugged, a stream that breaks or goes quiet for `timeout` seconds) ends the
thread with one line in `error`; a file's end is a normal end. With `reconnect` seconds, a camera or stream that
stops or ends after it gave frames is opened again and again for up to that long, the slot left open (so the
session's outputs stay open too): one warning line when it is lost, one when it is back (`reconnects` counts
them); one that does not come back ends the thread as above.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from slimfuse.errors import InputMissingError, LiveInputError
from slimfuse.live.slot import LatestSlot

LOG = logging.getLogger(__name__)
RETRY_OPEN_S = 1.0
"""While reconnecting, each try waits at most this long for the input's data (so a stop is answered within it)."""
RETRY_PAUSE_S = 0.25
"""... and a try that fails at once (a camera not back yet) is repeated after this pause."""
NETWORK_OPTIONS = {"flags": "low_delay", "probesize": "200000", "analyzeduration": "200000"}
"""Low-delay decoding, and a short probe (0.2 s of the stream, not five). Not `fflags nobuffer`: it throws away
the packets read while probing, the first keyframe among them, so nothing decodes until the next one."""


@dataclass(frozen=True)
class InputOptions:
    size: tuple[int, int] | None = None
    """A camera's capture size (width, height); None: its default."""
    fps: float | None = None
    """A camera's capture rate; None: its default."""
    camera_format: str | None = "mjpeg"
    """The camera's pixel format to ask for (MJPEG where offered: more frames per second over USB)."""
    timeout: float = 5.0
    """Seconds without a frame before a stream counts as stopped."""
    open_timeout: float = 30.0
    """Seconds to wait for a stream's first data (a sender that starts later)."""
    loop: bool = False
    """A file starts again at its end (demos, soak tests), its clock going on."""
    reconnect: float = 0.0
    """Seconds a camera or stream that stops (or ends) may take to come back; 0: the session ends with it."""


@dataclass(frozen=True)
class LiveFrame:
    index: int
    """The frame's number in the input (drops leave gaps)."""
    rgb: np.ndarray
    time: float
    """Seconds on the input's own clock."""
    arrived: float
    """time.perf_counter() when it was decoded: latency counts from here."""


def kind_of(spec: str) -> str:
    """camera (a /dev/video device), stream (a URL) or file."""
    if spec.startswith("/dev/video"):
        return "camera"
    if "://" in spec:
        return "stream"
    return "file"


class LiveInput:
    def __init__(self, spec: str, slot: LatestSlot[LiveFrame], options: InputOptions = InputOptions()) -> None:
        self.spec = spec
        self.kind = kind_of(spec)
        if self.kind == "file" and not Path(spec).is_file():
            raise InputMissingError(spec)
        self.slot = slot
        self.options = options
        self.frames = 0
        self.reconnects = 0
        self.error: LiveInputError | None = None
        self.size: tuple[int, int] | None = None
        self.rate: float | None = None
        self.opened = threading.Event()
        self._clock = 0.0
        self._lost: tuple[float, str] | None = None
        """While reconnecting: when the input was lost (time.monotonic()) and why."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slimfuse-live-input", daemon=True)

    def start(self) -> LiveInput:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _open(self) -> av.container.InputContainer:
        timeout, opening = self.options.timeout, self.options.open_timeout
        if self._lost is not None:
            opening = max(0.1, min(RETRY_OPEN_S, self.options.reconnect - (time.monotonic() - self._lost[0])))
        if self.kind == "camera":
            options = {key: value for key, value in (
                ("input_format", self.options.camera_format),
                ("video_size", None if self.options.size is None else "x".join(map(str, self.options.size))),
                ("framerate", None if self.options.fps is None else f"{self.options.fps:g}")) if value}
            return av.open(self.spec, format="v4l2", options=options, timeout=(opening, timeout))
        if self.kind == "stream":
            return av.open(self.spec, options=NETWORK_OPTIONS, timeout=(opening, timeout))
        return av.open(self.spec)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                tried = time.monotonic()
                try:
                    with self._open() as container:
                        self._read(container)
                    why = f"the {self.kind} ended after {self.frames} frames"
                except (av.error.FFmpegError, OSError) as exc:
                    if not self._resumable():
                        raise
                    why = self._why(exc)
                else:
                    if self.kind == "file" and self.options.loop:
                        continue
                    if not self._resumable():
                        return
                if not self._wait_for_comeback(why, tried):
                    return
        except (av.error.FFmpegError, OSError, IndexError) as exc:
            if not self._stop.is_set():
                self.error = LiveInputError(self.spec, self._why(exc))
        finally:
            self.opened.set()
            self.slot.close()

    def _resumable(self) -> bool:
        """Whether an input that stopped is waited for: a camera or stream, with `reconnect`, once it gave frames."""
        return self.kind != "file" and self.options.reconnect > 0 and self.frames > 0 and not self._stop.is_set()

    def _wait_for_comeback(self, why: str, tried: float) -> bool:
        """The input stopped (`why`), or a try to reopen it failed: whether to try again (False, with `error`
        set, once `reconnect` seconds have passed since it was lost)."""
        now, seconds = time.monotonic(), self.options.reconnect
        if self._lost is None:
            self._lost = (now, why)
            LOG.warning(f"{self.spec}: input lost: {why}; reconnecting for up to {seconds:g} s")
            return True
        if now - self._lost[0] >= seconds:
            self.error = LiveInputError(self.spec, f"{self._lost[1]}; it did not come back within {seconds:g} s")
            return False
        return not self._stop.wait(max(0.0, RETRY_PAUSE_S - (now - tried)))

    def _read(self, container: av.container.InputContainer) -> None:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        size = (stream.codec_context.width, stream.codec_context.height)
        if self.size is None:
            self.size = size
            self.rate = float(stream.average_rate) if stream.average_rate else None
            self.opened.set()
        scale = {} if size == self.size else {"width": self.size[0], "height": self.size[1]}  # the outputs' size
        started: tuple[float, float] | None = None  # (wall clock, input clock) of the first frame: file pacing
        offset = self._clock  # a looped file's or a resumed stream's clock goes on from where the last pass ended
        base: float | None = None if self._lost is not None else 0.0  # a resumed stream's own clock starts anywhere
        for frame in container.decode(stream):
            if self._stop.is_set():
                return
            own = float(frame.time) if frame.time is not None else self.frames / (self.rate or 30.0)
            if base is None:
                base = own
            at = offset + own - base
            if self.kind == "file":
                if started is None:
                    started = (time.perf_counter(), at)
                wait = started[0] + (at - started[1]) - time.perf_counter()
                if wait > 0 and self._stop.wait(wait):
                    return
            if self._lost is not None:
                LOG.warning(f"{self.spec}: input back after {time.monotonic() - self._lost[0]:.1f} s; resumed")
                self._lost = None
                self.reconnects += 1
            self.slot.put(LiveFrame(self.frames, frame.to_ndarray(format="rgb24", **scale), at, time.perf_counter()))
            self.frames += 1
            self._clock = at + 1 / (self.rate or 30.0)

    def _why(self, exc: BaseException) -> str:
        if self.frames == 0 and isinstance(exc, av.error.ExitError):  # the open timeout's interrupt
            return (f"nothing arrived within {self.options.open_timeout:g} s (is the stream being sent, to this "
                    "address and port?)")
        if self.frames == 0 and not isinstance(exc, IndexError):
            return f"cannot open the live input ({_problem(exc)})"
        if isinstance(exc, IndexError):
            return "the input holds no video stream"
        if isinstance(exc, av.error.ExitError):  # the read timeout's interrupt
            return f"the {self.kind} stopped after {self.frames} frames (no data for {self.options.timeout:g} s)"
        return f"the {self.kind} stopped after {self.frames} frames ({_problem(exc)})"


def _problem(exc: BaseException) -> str:
    """An FFmpeg error as a user reads it: its text, without FFmpeg's internal error number."""
    return str(getattr(exc, "strerror", None) or exc)

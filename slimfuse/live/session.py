"""The latest-frame loop: input thread -> slot -> swap -> slot -> output thread.

Each slot holds at most one frame; a newer frame replaces one that is still waiting (and is counted as dropped),
so however slow a stage is, no frame waits behind another and latency cannot build up. The swap runs on the
caller's thread (Ctrl-C reaches it there), through a LiveLoop that applies the session's Controls (live/controls.py);
its time per frame drives the latency ladder.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from slimfuse.errors import LiveOutputError, SlimfuseError
from slimfuse.live.controls import Controls, LiveLoop
from slimfuse.live.inputs import InputOptions, LiveFrame, LiveInput
from slimfuse.live.ladder import LatencyLadder, steps_for
from slimfuse.live.outputs import LiveOutput
from slimfuse.live.slot import Closed, LatestSlot
from slimfuse.live.stats import LiveStats, Snapshot
from slimfuse.pipeline.run import Run, SourceImage

OutputFactory = Callable[[tuple[int, int], float], LiveOutput]
"""Opens an output once the input's frame size and rate are known."""
DEFAULT_FPS = 30.0
POLL_S = 0.2
"""How often a waiting loop looks at its stop conditions."""


@dataclass(frozen=True)
class LiveOptions:
    latency_budget_ms: float = 1000 / DEFAULT_FPS
    ladder: bool = True
    duration: float | None = None
    """Seconds after which the session ends by itself; None: when the input ends."""
    max_frames: int | None = None
    """Processed frames after which the session ends by itself."""
    status_every: float = 1.0


@dataclass
class LiveResult:
    input: str
    size: tuple[int, int] | None
    input_frames: int
    processed: int
    written: int
    dropped_input: int
    dropped_output: int
    reconnects: int
    seconds: float
    fps: float
    latency: dict[str, float | None]
    ladder: list[dict[str, object]]
    final_step: str
    ended: str
    faces: dict[str, int] = field(default_factory=dict)
    """The frame loop's counts (faces swapped, detections run, faces generated and reused)."""
    error: SlimfuseError | None = None

    def to_dict(self) -> dict[str, object]:
        data = {key: value for key, value in asdict(self).items() if key != "error"}
        data["error"] = None if self.error is None else {"type": type(self.error).__name__,
                                                         "exit_code": self.error.exit_code,
                                                         "message": self.error.message}
        return data


class _OutputStage:
    """Writes the newest processed frame to every output on a thread of its own."""

    def __init__(self, outputs: Sequence[LiveOutput], stats: LiveStats, origin: float, stop: threading.Event) -> None:
        self.outputs = outputs
        self.slot: LatestSlot[tuple[LiveFrame, np.ndarray]] = LatestSlot()
        self.stats = stats
        self.origin = origin
        self.stop = stop
        self.error: LiveOutputError | None = None
        self._thread = threading.Thread(target=self._run, name="slimfuse-live-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                item = self.slot.take()
            except Closed:
                return
            if item is None:
                continue
            frame, rgb = item
            try:
                for output in self.outputs:
                    output.write(rgb, frame.arrived - self.origin)
            except LiveOutputError as error:
                self.error = error
                self.stop.set()
                return
            self.stats.on_written((time.perf_counter() - frame.arrived) * 1000)

    def finish(self) -> None:
        self.slot.close()
        self._thread.join()
        for output in self.outputs:
            output.close()


class LiveSession:
    def __init__(self, run: Run, input_spec: str, outputs: Sequence[OutputFactory], options: LiveOptions = LiveOptions(),
                 input_options: InputOptions = InputOptions(), controls: Controls | None = None,
                 status: Callable[[Snapshot, str], None] | None = None,
                 faces: Sequence[Sequence[SourceImage]] = ()) -> None:
        """faces: further source faces (each the photos of one person) that Controls.face switches to."""
        self.run = run
        self.faces = faces
        self.options = options
        self.controls = controls or Controls()
        self.status = status
        self.stats = LiveStats()
        self.frames: LatestSlot[LiveFrame] = LatestSlot()
        self.input = LiveInput(input_spec, self.frames, input_options)
        self.output_factories = outputs
        swap, faces = run.config.swap, run.config.faces
        self.ladder = LatencyLadder(steps_for(swap.target_face_size, faces.face_detector_interval),
                                    options.latency_budget_ms, enabled=options.ladder)
        self._stage: _OutputStage | None = None
        self._live_loop: LiveLoop | None = None
        self._started = time.perf_counter()
        self.ended = "running"

    def snapshot(self) -> Snapshot:
        dropped_output = 0 if self._stage is None else self._stage.slot.dropped
        return self.stats.snapshot(self.frames.dropped, dropped_output, self.input.reconnects)

    def run_session(self) -> LiveResult:
        """Run until the input ends, the duration or frame count is reached, a control stops it, or an error; the
        threads are stopped and the outputs closed on every way out (Ctrl-C too)."""
        loop = self._live_loop = LiveLoop(self.run, self.controls, self.faces)
        top = self.ladder.step
        loop.frames.tune(top.face_size, top.detect_interval)  # a run used before may have been left lower
        started = self._started = time.perf_counter()
        try:
            self.input.start()
            self.input.opened.wait()
            size = self.input.size
            if size is not None and self.input.error is None:
                fps = self.input.rate or DEFAULT_FPS
                self._stage = _OutputStage([factory(size, fps) for factory in self.output_factories], self.stats,
                                           started, self.controls.stop)
                self._loop(loop, started)
        finally:
            self.input.stop()
            if self._stage is not None:
                self._stage.finish()
        return self.result()

    def _loop(self, loop: LiveLoop, started: float) -> None:
        options, controls = self.options, self.controls
        last_status = started
        while not controls.stop.is_set():
            if options.duration is not None and time.perf_counter() - started >= options.duration:
                self.ended = f"the duration of {options.duration:g} s was reached"
                return
            if options.max_frames is not None and self.stats.processed >= options.max_frames:
                self.ended = f"{options.max_frames} frames were processed"
                return
            try:
                frame = self.frames.take(POLL_S)
            except Closed:
                self.ended = "the input ended" if self.input.error is None else "the input stopped"
                return
            if frame is not None:
                self._process(loop, frame)
            now = time.perf_counter()
            if self.status is not None and now - last_status >= options.status_every:
                last_status = now
                self.status(self.snapshot(), self.ladder.step.describe())
        self.ended = "the output stopped" if self._stage is not None and self._stage.error else "stopped"

    def _process(self, loop: LiveLoop, frame: LiveFrame) -> None:
        assert self._stage is not None  # opened before the loop starts
        loop.apply()  # a change (another face prepared) is not counted as the frame's swap time
        begun = time.perf_counter()
        rgb = loop.process(frame.rgb, frame.time)
        took_ms = (time.perf_counter() - begun) * 1000
        self.stats.on_processed(took_ms)
        if self.controls.swap:
            step = self.ladder.observe(took_ms)
            if step is not None:
                loop.frames.tune(step.face_size, step.detect_interval)
        self._stage.slot.put((frame, rgb))

    def result(self) -> LiveResult:
        """What the session did so far (all of it, once run_session returned)."""
        seconds = time.perf_counter() - self._started
        snapshot = self.snapshot()
        error: SlimfuseError | None = self.input.error
        if error is None and self._stage is not None:
            error = self._stage.error
        return LiveResult(
            input=self.input.spec, size=self.input.size, input_frames=self.input.frames,
            processed=snapshot.processed, written=snapshot.written, dropped_input=snapshot.dropped_input,
            dropped_output=snapshot.dropped_output, reconnects=snapshot.reconnects, seconds=round(seconds, 3),
            fps=round(snapshot.processed / seconds, 2) if seconds > 0 else 0.0, latency=self.stats.whole(),
            ladder=[asdict(change) for change in self.ladder.changes], final_step=self.ladder.step.describe(),
            ended=self.ended, faces={} if self._live_loop is None else asdict(self._live_loop.frames.stats()),
            error=error)

"""`slimfuse live` on real streams over UDP loopback: MPEG-TS in (a PyAV sender at a camera's pace) and out (a PyAV
reader), frames counted and in order, the source's face in them; a stream cut mid-way ends with one line and
exit 34; with --reconnect, a sender that comes back within it is resumed (the session goes on, exit 0) and one that
does not ends it (exit 34); the keys in a terminal (a pty) switch the source face; Ctrl-C ends with exit 130 and
nothing left behind."""
from __future__ import annotations

import json
import os
import pty
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import av
import numpy as np

from PIL import Image

from streams import Receiver, code_of, free_udp_port, moving_face, send, wait_listening
from slimfuse.bench.clips import make_clip
from slimfuse.faces.analyse import FaceAnalyser
from people import who
from slimfuse.faces.identity import SAME_PERSON_DISTANCE, IdentityModel, distance
from slimfuse.models.pool import ModelPool

ROOT = Path(__file__).resolve().parents[2]


def _live(*args: str | Path, stdin: int = subprocess.DEVNULL) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    return subprocess.Popen([sys.executable, "-m", "slimfuse", "live", *map(str, args)], env=env, text=True,
                            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


class Lines:
    """The lines of a running session's stderr, read on a thread, waited for with a bound."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(process.stderr,), daemon=True)
        self._thread.start()

    def _read(self, pipe: object) -> None:
        for line in pipe:  # type: ignore[attr-defined]
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, text: str, seconds: float = 120.0) -> str:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} within {seconds:g} s; seen: {self.seen}")

    def rest(self) -> list[str]:
        self._thread.join(60)
        while (line := self._queue.get()) is not None:
            self.seen.append(line)
        return self.seen

    def said(self) -> list[str]:
        """The lines other than the status lines."""
        return [line for line in self.rest() if not line.startswith("live: ")]


def _identity(pool: ModelPool, image: np.ndarray) -> np.ndarray:
    return IdentityModel(pool).descriptor(image, FaceAnalyser(pool).faces(image)[0])


def test_udp_in_udp_out_frames_in_order_with_the_source_face_then_a_cut(
        tmp_path: Path, astronaut_path: Path, grace_hopper: np.ndarray, astronaut: np.ndarray, pool: ModelPool) -> None:
    sent = moving_face(grace_hopper, 60)
    port_in, port_out = free_udp_port(), free_udp_port()
    receiver = Receiver(port_out)
    report = tmp_path / "live.json"
    live = _live("-s", astronaut_path, "--input", f"udp://127.0.0.1:{port_in}", "--output",
                 f"udp://127.0.0.1:{port_out}", "--input-timeout", "2", "--report", report, "--quiet")
    wait_listening(port_in)
    send(f"udp://127.0.0.1:{port_in}", sent, fps=15, cut=True)  # the link drops: no end of stream is sent
    _, stderr = live.communicate(timeout=120)
    received = receiver.join()
    data = json.loads(report.read_text())

    # A UDP stream has no end of its own: silence for --input-timeout ends the session, with one line.
    assert live.returncode == 34, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and f"udp://127.0.0.1:{port_in}: the stream stopped after" in lines[0], stderr
    assert data["ok"] is False and data["error"]["exit_code"] == 34
    # MPEG-TS hands a frame on when the next one begins, so the last two stay in the demuxer when the stream stops.
    assert len(sent) - 2 <= data["input_frames"] <= len(sent)
    assert data["processed"] + data["dropped_input"] == data["input_frames"]
    # Frames that arrive together (the probe's, the first ones while the models warm up, all of them on a slow
    # machine) replace each other: how many get through is the benchmark's to measure; enough to check faces in.
    assert data["processed"] >= 6
    # The output keeps only the newest frame too: every processed frame is written or counted as dropped there. On
    # a loaded machine the writer can miss one now and then; a tenth would be the output falling behind.
    assert data["written"] + data["dropped_output"] == data["processed"]
    assert data["dropped_output"] <= data["processed"] // 10, data
    # UDP may drop a datagram on a loaded machine even on loopback; a frame whose start is lost merges with the one
    # before, so the reader may see one fewer. More than that would be the output losing frames.
    assert data["written"] - 1 <= len(received) <= data["written"]
    numbers = [code_of(frame) for frame in received]
    assert numbers == sorted(set(numbers)) and numbers[-1] >= data["input_frames"] - 3, numbers
    source = _identity(pool, astronaut)
    for frame in received[5::15]:
        assert distance(_identity(pool, frame), source) < SAME_PERSON_DISTANCE


def test_ctrl_c_exits_130_and_leaves_nothing_behind(tmp_path: Path, astronaut_path: Path,
                                                    grace_hopper: np.ndarray) -> None:
    clip = make_clip(tmp_path / "camera.mp4", moving_face(grace_hopper, 300), fps=30)
    out = tmp_path / "out"
    out.mkdir()
    live = _live("-s", astronaut_path, "--input", clip, "--output", out / "rec.ts", "--report", out / "live.json")
    assert live.stderr is not None
    line = live.stderr.readline()  # the first status line: frames are going through
    assert line.startswith("live: "), line
    live.send_signal(signal.SIGINT)
    _, rest = live.communicate(timeout=60)
    assert live.returncode == 130
    assert rest.strip().splitlines()[-1] == "slimfuse: interrupted; no output was written"
    assert sorted(path.name for path in out.iterdir()) == ["live.json", "rec.ts"]  # no temporary files
    data = json.loads((out / "live.json").read_text())
    assert data["ok"] is False and 0 < data["written"] < 300


def test_a_stream_that_comes_back_within_reconnect_is_resumed(tmp_path: Path, astronaut_path: Path,
                                                              grace_hopper: np.ndarray) -> None:
    port_in, port_out = free_udp_port(), free_udp_port()
    url = f"udp://127.0.0.1:{port_in}"
    receiver = Receiver(port_out)
    report = tmp_path / "live.json"
    live = _live("-s", astronaut_path, "--input", url, "--output", f"udp://127.0.0.1:{port_out}", "--input-timeout",
                 "1", "--reconnect", "20", "--duration", "14", "--report", report)
    lines = Lines(live)
    wait_listening(port_in)
    send(url, moving_face(grace_hopper, 30), fps=15, cut=True)  # the link drops
    lost = lines.wait_for("input lost", 30)
    stopped = threading.Event()
    again = threading.Thread(target=lambda: send(url, _until(stopped, moving_face(grace_hopper, 300)), fps=15))
    again.start()  # the camera is back, until the session ends by --duration
    back = lines.wait_for("resumed", 30)
    live.wait(120)
    stopped.set()
    again.join(60)
    said = lines.said()
    received = receiver.join()
    data = json.loads(report.read_text())

    assert live.returncode == 0, said
    assert lost.startswith(f"slimfuse: warning: {url}: input lost: the stream stopped after ")
    assert lost.endswith(" frames (no data for 1 s); reconnecting for up to 20 s"), lost
    assert back.startswith(f"slimfuse: warning: {url}: input back after ") and back.endswith(" s; resumed")
    assert said[-1].startswith(f"slimfuse: {url}: the duration of 14 s was reached;") and "1 reconnect" in said[-1]
    after = lines.seen[lines.seen.index(back):]
    assert any(line.startswith("live: ") and ", 1 reconnect, " in line for line in after), after
    assert data["ok"] is True and data["reconnects"] == 1 and data["error"] is None
    assert data["input_frames"] > 30 + 15  # frames of both senders went through
    # One output stream all along, its frames from the first sender (numbered from 0), then from the second.
    numbers = [code_of(frame) for frame in received]
    restart = next(index for index in range(1, len(numbers)) if numbers[index] < numbers[index - 1])
    first, second = numbers[:restart], numbers[restart:]
    assert first == sorted(set(first)) and first[-1] >= 20 and second == sorted(set(second)) and len(second) > 15
    assert data["written"] - 2 <= len(received) <= data["written"]


def test_a_stream_that_does_not_come_back_within_reconnect_ends_with_exit_34(tmp_path: Path, astronaut_path: Path,
                                                                             grace_hopper: np.ndarray) -> None:
    port_in = free_udp_port()
    url = f"udp://127.0.0.1:{port_in}"
    report = tmp_path / "live.json"
    live = _live("-s", astronaut_path, "--input", url, "--input-timeout", "1", "--reconnect", "2", "--report",
                 report, "--quiet")
    lines = Lines(live)
    wait_listening(port_in)
    send(url, moving_face(grace_hopper, 20), fps=15, cut=True)
    begun = time.monotonic()
    live.wait(60)
    said = lines.said()
    data = json.loads(report.read_text())
    assert live.returncode == 34, said
    assert len(said) == 2 and said[0].startswith(f"slimfuse: warning: {url}: input lost: the stream stopped"), said
    assert said[1].startswith(f"slimfuse: {url}: the stream stopped after ")
    assert said[1].endswith("frames (no data for 1 s); it did not come back within 2 s"), said
    # It gave up only after the reconnect window (2 s, which begins after the 1 s without data): no upper bound
    # on the wait, a busy machine may take its time to wind down (live.wait above is the guard against a hang).
    assert time.monotonic() - begun >= 2
    assert data["ok"] is False and data["error"]["exit_code"] == 34 and data["reconnects"] == 0


def test_the_f_key_in_a_terminal_switches_to_the_next_source_face(tmp_path: Path, astronaut_path: Path,
                                                                  grace_hopper_path: Path, grace_hopper: np.ndarray,
                                                                  astronaut: np.ndarray, pool: ModelPool) -> None:
    clip = make_clip(tmp_path / "camera.mp4", moving_face(grace_hopper, 900), fps=30)
    wall = tmp_path / "wall.png"
    Image.fromarray(np.full((300, 300, 3), 128, np.uint8)).save(wall)
    recording = tmp_path / "rec.ts"
    terminal, keys = pty.openpty()  # the session's stdin is a terminal: its keys are read
    live = _live("-s", astronaut_path, "--switch-source", wall, "--switch-source", grace_hopper_path, "--input",
                 clip, "--output", recording, "--report", tmp_path / "live.json", stdin=keys)
    os.close(keys)
    lines = Lines(live)
    try:
        assert lines.wait_for("keys: ").endswith("f next source face, m keep the target's mouth on/off, e face "
                                                 "enhancer on/off, d face debugger on/off, v selector one/many, q quit")
        lines.wait_for("live: ")  # frames are going through
        time.sleep(1.0)
        os.write(terminal, b"f")
        passed = lines.wait_for(f"{wall}: ")
        os.write(terminal, b"f")
        switched = lines.wait_for("source face 3 of 3")
        time.sleep(1.5)
        os.write(terminal, b"e")
        enhancer = lines.wait_for("face enhancer")
        os.write(terminal, b"m")
        mouth = lines.wait_for("mouth: ")
        os.write(terminal, b"q")
        live.wait(60)
    finally:
        if live.poll() is None:
            live.kill()
        os.close(terminal)
    said = lines.said()
    assert live.returncode == 0, said
    assert passed == f"slimfuse: warning: {wall}: no face found in the source image; keeping source face 1"
    assert switched == f"slimfuse: source face 3 of 3: {grace_hopper_path}"
    assert enhancer == ("slimfuse: warning: there is no face enhancer to switch on or off: start with "
                        "--face-enhancer-model")
    assert mouth == "slimfuse: mouth: swapped with the face"
    with av.open(str(recording)) as container:
        frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
    source, other = _identity(pool, astronaut), _identity(pool, grace_hopper)
    people = {"astronaut": source, "grace_hopper": other}
    assert who(_identity(pool, frames[5]), people) == "astronaut"
    assert who(_identity(pool, frames[-3]), people) == "grace_hopper"


def _until(stop: threading.Event, frames: list[np.ndarray]) -> Iterator[np.ndarray]:
    for frame in frames:
        if stop.is_set():
            return
        yield frame

"""`slimfuse live` on real streams over UDP loopback: MPEG-TS in (a PyAV sender at a camera's pace) and out (a PyAV
reader), frames counted and in order, the source's face in them; a stream cut mid-way ends with one line and
exit 34; Ctrl-C ends with exit 130 and nothing left behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from streams import Receiver, code_of, free_udp_port, moving_face, send, wait_listening
from slimfuse.bench.clips import make_clip
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.identity import SAME_PERSON_DISTANCE, IdentityModel, distance
from slimfuse.models.pool import ModelPool

ROOT = Path(__file__).resolve().parents[2]


def _live(*args: str | Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "slimfuse", "live", *map(str, args)], env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


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
    # Frames that arrive together (the probe's, the first ones while the models warm up) replace each other.
    assert data["written"] == data["processed"] >= data["input_frames"] // 2
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

"""Ctrl-C and SIGTERM through real processes, at moments from the start of a run to its end: one line, exit 130 /
143, no output, no traceback. Each moment is an event the test waits for, never a sleep."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import av
import numpy as np
import pytest
from processes import catches_sigterm, has_loaded, read_until, wait_for

from slimfuse.bench.clips import make_clip, pan
from slimfuse.cli.main import main

FRAMES = 150
LINES = {signal.SIGINT: (130, "slimfuse: interrupted; no output was written"),
         signal.SIGTERM: (143, "slimfuse: terminated (SIGTERM); no output was written")}
# Starts a command with SIGINT ignored, as `nohup cmd &` and a shell script's background jobs do.
IGNORING_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"


# Sends the process a signal the moment it first imports MODULE (argv[1]), then runs the console script's code.
SIGNAL_ON_IMPORT = """
import os, sys
MODULE, SIGNUM = sys.argv[1], int(sys.argv[2])
del sys.argv[1:3]
class SignalOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), SIGNUM)
        return None
sys.meta_path.insert(0, SignalOnImport())
from slimfuse.cli.main import main
sys.exit(main())
"""


def console_script() -> list[str]:
    """What the installed `slimfuse` script runs: its entry point, imported and called."""
    (entry,) = entry_points(group="console_scripts", name="slimfuse")
    module, function = entry.value.split(":")
    return [sys.executable, "-c", f"import sys; from {module} import {function}; sys.exit({function}())"]


LAUNCHERS = {"python -m": [sys.executable, "-m", "slimfuse"], "console script": console_script(),
             "started with SIGINT ignored": [sys.executable, "-c", IGNORING_SIGINT, sys.executable, "-m", "slimfuse"]}


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    return make_clip(tmp_path_factory.mktemp("clip") / "pan.mp4", pan(grace_hopper, (320, 240), FRAMES), fps=25,
                     audio=True)


def start(launcher: str, clip: Path, astronaut_path: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([*LAUNCHERS[launcher], "swap", "-s", str(astronaut_path), "-t", str(clip), "-o",
                             str(out / "result.mp4"), "--log-format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


MOMENTS = [
    ("starting", "console script", signal.SIGINT),
    ("starting", "python -m", signal.SIGTERM),
    ("importing", "console script", signal.SIGTERM),
    ("importing", "started with SIGINT ignored", signal.SIGINT),
    ("working", "python -m", signal.SIGINT),
    ("working", "started with SIGINT ignored", signal.SIGINT),
    ("working", "console script", signal.SIGTERM),
]


@pytest.mark.slow
@pytest.mark.parametrize(("moment", "launcher", "stop"), MOMENTS, ids=[f"{m}-{la}-{s.name}" for m, la, s in MOMENTS])
def test_a_signal_at_any_moment_is_one_line_and_its_exit_code(tmp_path: Path, clip: Path, astronaut_path: Path,
                                                               moment: str, launcher: str,
                                                               stop: signal.Signals) -> None:
    out = tmp_path / "out"
    out.mkdir()
    process = start(launcher, clip, astronaut_path, out)
    try:
        if moment == "starting":  # the handling is in, numpy and onnxruntime are not loaded yet (or are loading)
            wait_for(lambda: catches_sigterm(process.pid), process, "signal handling")
        elif moment == "importing":
            wait_for(lambda: has_loaded(process.pid, "onnxruntime"), process, "onnxruntime loaded")
        else:
            assert read_until(process.stderr, '"event": "progress"'), "no progress line"
        process.send_signal(stop)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    code, line = LINES[stop]
    assert process.returncode == code, err
    assert err.strip().splitlines()[-1] == line and "Traceback" not in err and "Error" not in err, err
    assert list(out.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_after_the_output_is_written_keeps_it(tmp_path: Path, clip: Path, astronaut_path: Path,
                                                       stop: signal.Signals) -> None:
    """Once the path is printed the run is over: a signal while the process winds down ends it with the run's own
    exit code, and the output stays whole."""
    out = tmp_path / "out"
    out.mkdir()
    process = start("console script", clip, astronaut_path, out)
    try:
        printed = process.stdout.readline()  # type: ignore[union-attr]
        process.send_signal(stop)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert printed.strip() == str(out / "result.mp4")
    assert process.returncode == 0, err
    assert json.loads(err.strip().splitlines()[-1])["event"] == "done" and "Traceback" not in err
    with av.open(printed.strip()) as container:
        assert sum(1 for _ in container.decode(video=0)) == FRAMES
    assert [path.name for path in out.iterdir()] == ["result.mp4"]


# A command whose clean-up gets a second Ctrl-C (the first one raised the interrupt it is cleaning up after).
SECOND_SIGNAL = """
import os, signal, sys
from slimfuse.cli.interrupt import Interrupts
interrupts = Interrupts().install()
with interrupts.working():
    try:
        os.kill(os.getpid(), signal.SIGINT)
        signal.pause()
    except KeyboardInterrupt:
        print("cleaning up", flush=True)
        os.kill(os.getpid(), signal.SIGINT)
        print("clean-up finished", flush=True)
"""


def test_a_second_signal_during_the_clean_up_ends_at_once() -> None:
    """Ctrl-C pressed twice: the second lands while the first one's clean-up runs and ends the process there,
    with the same one line."""
    result = subprocess.run([sys.executable, "-c", SECOND_SIGNAL], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (130, "cleaning up\n", LINES[signal.SIGINT][1] + "\n")


IMPORTS = [("numpy", signal.SIGINT), ("onnxruntime", signal.SIGTERM), ("av", signal.SIGINT), ("cv2", signal.SIGINT)]


@pytest.mark.parametrize(("module", "stop"), IMPORTS, ids=[f"{m}-{s.name}" for m, s in IMPORTS])
def test_a_signal_inside_a_heavy_import_is_one_line(tmp_path: Path, clip: Path, astronaut_path: Path, module: str,
                                                    stop: signal.Signals) -> None:
    """The exact moment the first second of a run is spent in: importing numpy, onnxruntime, PyAV, OpenCV (an
    interrupt raised inside one comes out as its ImportError unless the handling is in place first)."""
    result = subprocess.run([sys.executable, "-c", SIGNAL_ON_IMPORT, module, str(int(stop)), "swap",
                             "-s", str(astronaut_path), "-t", str(clip), "-o", str(tmp_path / "out.mp4")],
                            capture_output=True, text=True, timeout=120)
    code, line = LINES[stop]
    assert (result.returncode, result.stderr) == (code, line + "\n")
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_main_with_arguments_gives_the_callers_handling_back(tmp_path: Path) -> None:
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    assert main(["swap", "-s", str(tmp_path / "absent.jpg"), "-t", str(tmp_path / "t.jpg"),
                 "-o", str(tmp_path / "o.jpg")]) == 3
    assert {signum: signal.getsignal(signum) for signum in before} == before

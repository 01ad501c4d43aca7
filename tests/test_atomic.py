"""Atomic output: the temporary name carries the owner's pid, outputs get the user's normal file mode, and a run
removes the leftovers of processes that died mid-write (a real `kill -9`), and only those."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from slimfuse.atomic import AtomicFile, host_tag, remove_stale, stale_owner, temporary_name, write_bytes_atomic
from slimfuse.errors import InputUnreadableError
from slimfuse.media.image_io import read_image, write_image_atomic
from slimfuse.media.temp_frames import TempFrames
from slimfuse.media.video_probe import probe


def _killed_mid_write(folder: Path, script: str) -> None:
    """Run `script` (which prints 'ready' once it is writing) in a child and kill -9 it there."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                          os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), str(folder)], stdout=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


def test_a_write_killed_with_sigkill_is_cleaned_up_by_the_next_run(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    _killed_mid_write(tmp_path, """
        import sys, time
        from pathlib import Path
        from slimfuse.atomic import AtomicFile
        atomic = AtomicFile(Path(sys.argv[1]) / "out.jpg")
        with atomic.open() as handle:
            handle.write(b"half a jpeg")
            handle.flush()
            print("ready", flush=True)
            time.sleep(60)
    """)
    left = [path for path in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].name.startswith(".out.jpg.") and stale_owner(left[0].name) is not None
    assert not (tmp_path / "out.jpg").exists()
    notices: list[str] = []
    write_image_atomic(Image.fromarray(grace_hopper), tmp_path / "out.jpg", notify=notices.append)
    assert [path.name for path in tmp_path.iterdir()] == ["out.jpg"]
    assert len(notices) == 1 and str(left[0]) in notices[0] and "gone" in notices[0]


def test_live_owners_and_other_files_are_left_alone(tmp_path: Path) -> None:
    mine = AtomicFile(tmp_path / "a.png")  # this process is alive: its temporary file is in use
    (tmp_path / ".notes.part").write_text("not ours")  # no pid in the name
    (tmp_path / "photo.jpg").write_bytes(b"x")
    assert remove_stale(tmp_path) == []
    assert mine.temp.exists()
    mine.discard()
    assert not mine.temp.exists()


def test_outputs_get_the_users_file_mode(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    old = os.umask(0o022)
    try:
        write_image_atomic(Image.fromarray(grace_hopper), tmp_path / "out.jpg")
        write_bytes_atomic(tmp_path / "report.json", b"{}")
    finally:
        os.umask(old)
    for name in ("out.jpg", "report.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644  # not mkstemp's 0600


def test_temporary_names_carry_the_pid(tmp_path: Path) -> None:
    name = temporary_name(tmp_path / "out.mp4").name
    assert name.startswith(f".out.mp4.{os.getpid()}@{host_tag()}.") and name.endswith(".part")
    assert stale_owner(name) == os.getpid()
    assert stale_owner(name.replace(f"@{host_tag()}.", "@elsewhere.")) is None  # another machine's: not ours


def test_an_interrupt_inside_the_block_removes_the_temporary_file(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), AtomicFile(tmp_path / "out.bin") as atomic:
        with atomic.open() as handle:
            handle.write(b"partial")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_disk_mode_folders_of_killed_runs_are_removed(tmp_path: Path) -> None:
    _killed_mid_write(tmp_path, """
        import sys, time
        from pathlib import Path
        from slimfuse.media.temp_frames import TempFrames
        with TempFrames("bmp", root=Path(sys.argv[1])) as frames:
            (frames.path / "00000000_pts0_dur1.bmp").write_bytes(b"frame")
            print("ready", flush=True)
            time.sleep(60)
    """)
    stale = list(tmp_path.iterdir())
    assert len(stale) == 1 and stale[0].is_dir() and stale[0].name.startswith("slimfuse-frames-")
    notices: list[str] = []
    with TempFrames("bmp", root=tmp_path, notify=notices.append) as frames:
        assert [path.name for path in tmp_path.iterdir()] == [frames.path.name]
        assert frames.path.name.startswith(f"slimfuse-frames-{os.getpid()}@{host_tag()}-")
    assert len(notices) == 1 and str(stale[0]) in notices[0]
    assert list(tmp_path.iterdir()) == []


def test_a_folder_as_input_says_it_is_a_folder(tmp_path: Path) -> None:
    for folder in (tmp_path / "photos", tmp_path / "clip.mp4"):
        folder.mkdir()
        for read in (read_image, probe):
            with pytest.raises(InputUnreadableError) as caught:
                read(folder)
            assert "is a folder, not an image or video file" in caught.value.message
            assert "permission denied" not in caught.value.message


def test_killed_owner_is_gone_when_its_pid_is_checked(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    time.sleep(0.05)
    leftover = tmp_path / f".out.png.{child.pid}@{host_tag()}.0123abcd.part"
    leftover.write_bytes(b"x")
    elsewhere = tmp_path / f".out.png.{child.pid}@another-machine.0123abcd.part"
    elsewhere.write_bytes(b"x")
    assert remove_stale(tmp_path) == [leftover] and not leftover.exists() and elsewhere.exists()


def test_the_video_writer_removes_leftovers_of_dead_runs_too(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    from slimfuse.bench.clips import make_clip, still
    from slimfuse.media.formats import EncodeSettings
    from slimfuse.media.video_reader import VideoReader
    from slimfuse.media.video_writer import VideoWriter

    source = make_clip(tmp_path / "in.mp4", still(grace_hopper, size=(160, 120), count=3))
    out = tmp_path / "out"
    out.mkdir()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    leftover = out / f".out.mp4.{child.pid}@{host_tag()}.89abcdef.part"
    leftover.write_bytes(b"half a video")
    notices: list[str] = []
    with VideoReader(source) as reader, VideoWriter(out / "out.mp4", probe(source), EncodeSettings(preset="ultrafast"),
                                                    notify=notices.append) as writer:
        for frame in reader:
            writer.write(frame)
    assert [path.name for path in out.iterdir()] == ["out.mp4"]
    assert any(str(leftover) in notice for notice in notices)

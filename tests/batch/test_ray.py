"""Batch items and video segments on a local Ray cluster (loopback, 2 CPUs, token auth off, its files in a temp
folder this module makes and removes): images and a segmented video through `--ray auto`, and an actor killed
mid-segment whose segment is redone elsewhere, the output equal to the run without the failure."""
from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import _thread
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from batch_media import CLIP_FRAMES, segment_clip, video_frames
from slimfuse.batch.items import BatchItem
from slimfuse.batch.runner import DONE, BatchResult, BatchRunner
from slimfuse.cli.main import main

ray = pytest.importorskip("ray")
from slimfuse.batch.ray_pool import LOOPBACK, LOOPBACK_ENV, RayPool  # noqa: E402 - only with the extra

ROOT = Path(__file__).resolve().parents[2]
PART = re.compile(r"^\.segment-\d{4}\.mp4\.(?P<pid>\d+)@")
WAIT_S = 600.0
"""Only a guard against a hang: on a machine busy with other jobs the actors take minutes to start a segment."""
# x264 reads memory it has not written: the same frames encode to slightly different bits from one run to the next
# (about 60 dB apart; with glibc's MALLOC_PERTURB_ set they come out the same). A lossless encode (quality 100:
# crf 0) decodes to exactly the frames that were swapped, so two runs can be compared bit for bit.
LOSSLESS = {"output_video_quality": 100}


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    token = Path.home() / ".ray" / "auth_token"
    had_token = token.exists()
    previous = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    folder = tempfile.mkdtemp(prefix="sfray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    path = os.pathsep.join(part for part in (str(ROOT), os.environ.get("PYTHONPATH", "")) if part)
    os.environ.update(LOOPBACK_ENV)
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=folder, _node_ip_address=LOOPBACK,
             log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path, "RAY_AUTH_MODE": "disabled",
                                                            **LOOPBACK_ENV}})
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
        if previous is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = previous
        for name in LOOPBACK_ENV:
            os.environ.pop(name, None)
        if not had_token:
            token.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    return segment_clip(tmp_path_factory.mktemp("clip") / "pan.mp4", grace_hopper)


def _run(item: BatchItem, journal: Path, options: dict[str, object] | None = None) -> BatchResult:
    pool = RayPool(2)
    try:
        return BatchRunner([item], options or {}, journal, pool).run()
    finally:
        pool.close()


def test_images_and_a_video_through_ray_auto(cluster: None, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             clip: Path, astronaut_path: Path, grace_hopper_path: Path) -> None:
    targets = tmp_path / "targets"
    targets.mkdir()
    shutil.copy(clip, targets / "pan.mp4")
    shutil.copy(grace_hopper_path, targets / "hopper.png")
    out = tmp_path / "out"
    code = main(["swap", "-s", str(astronaut_path), "-t", str(targets), "-o", str(out), "--ray", "auto"])
    stderr = capsys.readouterr().err
    assert code == 0, stderr
    assert "2 done, 0 skipped, 0 failed" in stderr and "join copied" in stderr and "2 workers" in stderr
    assert video_frames(out / "pan.mp4")[0] == video_frames(clip)[0]
    assert sorted(path.name for path in out.iterdir()) == [".slimfuse-batch.jsonl", "hopper.png", "pan.mp4"]


def test_a_killed_actor_has_its_segment_redone(cluster: None, tmp_path: Path, clip: Path,
                                               astronaut_path: Path) -> None:
    calm = tmp_path / "calm"
    calm.mkdir()
    reference = _run(BatchItem((astronaut_path,), clip, calm / "pan.mp4"), calm, LOSSLESS)
    assert [row.status for row in reference.rows] == [DONE]

    out = tmp_path / "killed"
    out.mkdir()
    finished: list[BatchResult] = []
    worker = threading.Thread(target=lambda: finished.append(_run(BatchItem((astronaut_path,), clip,
                                                                            out / "pan.mp4"), out, LOSSLESS)))
    worker.start()
    victim = _first_segment_writer(out, worker.is_alive)
    assert victim is not None, "the run ended before a segment was seen"
    os.kill(victim, signal.SIGKILL)
    worker.join(timeout=WAIT_S)
    assert not worker.is_alive() and finished
    (row,) = finished[0].rows
    assert row.status == DONE and row.frames == CLIP_FRAMES and row.segments == 4
    redone_pts, redone = video_frames(out / "pan.mp4")
    calm_pts, calm_frames = video_frames(calm / "pan.mp4")
    assert redone_pts == calm_pts
    assert all(np.array_equal(a, b) for a, b in zip(redone, calm_frames, strict=True))
    assert sorted(path.name for path in out.iterdir()) == [".slimfuse-batch.jsonl", "pan.mp4"]


def _first_segment_writer(out: Path, running: Callable[[], bool]) -> int | None:
    """The process of the first segment being written (its temporary file's name carries its pid), looked for
    while `running()`; None if it stopped first."""
    deadline = time.monotonic() + WAIT_S
    while running():
        for part in out.glob(".slimfuse-segments-*/.*/.segment-*.part"):
            match = PART.match(part.name)
            if match:
                return int(match["pid"])
        if time.monotonic() > deadline:
            raise AssertionError(f"no segment was started within {WAIT_S:.0f} s")
        time.sleep(0.02)
    return None


def test_ctrl_c_cancels_the_cluster_tasks_and_leaves_no_output(cluster: None, tmp_path: Path, clip: Path,
                                                               astronaut_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    pool = RayPool(2)
    runner = BatchRunner([BatchItem((astronaut_path,), clip, out / "pan.mp4")], {}, out, pool)
    ended = threading.Event()
    sent: list[int] = []

    def ctrl_c_while_a_segment_is_written() -> None:
        writer = _first_segment_writer(out, lambda: not ended.is_set())
        if writer is not None and not ended.is_set():
            sent.append(writer)
            _thread.interrupt_main()

    started = threading.Thread(target=ctrl_c_while_a_segment_is_written)
    started.start()
    try:
        try:
            runner.run()
        except KeyboardInterrupt:
            pass
        else:
            pytest.fail("the run ended normally: " + (f"Ctrl-C reached it while process {sent[0]} wrote a segment"
                                                      if sent else "no segment was seen being written"))
        finally:
            ended.set()
    finally:
        started.join()
        pool.close()
    assert pool.actors == [] and list(out.iterdir()) == []

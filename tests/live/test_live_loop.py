"""The latest-frame loop in process: a slow consumer makes frames drop instead of latency grow, the v4l2 seam gets
the very frames the outputs got, and the latency ladder steps down under a tight budget and back up with headroom."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from streams import code_of, moving_face
from slimfuse.bench.clips import make_clip
from slimfuse.config import RunConfig
from slimfuse.live.ladder import LatencyLadder, Step, steps_for
from slimfuse.live.outputs import RawOutput
from slimfuse.live.session import LiveOptions, LiveSession
from slimfuse.live.slot import Closed, LatestSlot
from slimfuse.pipeline.run import build_run


CONSUMER_S = 0.25


class SlowConsumer:
    """An output that takes 250 ms a frame (a congested link), recording what it got."""

    spec = "slow"

    def __init__(self) -> None:
        self.numbers: list[int] = []

    def write(self, rgb: np.ndarray, seconds: float) -> None:
        self.numbers.append(code_of(rgb))
        time.sleep(CONSUMER_S)

    def close(self) -> None:
        pass


def test_a_slow_consumer_drops_frames_and_latency_stays_bounded(tmp_path: Path, astronaut_path: Path,
                                                                grace_hopper: np.ndarray) -> None:
    clip = make_clip(tmp_path / "camera.mp4", moving_face(grace_hopper, 90), fps=30, crf=12)
    slow, seam = SlowConsumer(), tmp_path / "loopback.yuv"
    run = build_run(RunConfig.from_options([astronaut_path]))
    session = LiveSession(run, str(clip), [lambda size, fps: RawOutput(str(seam), size, fps, "rawvideo"),
                                           lambda size, fps: slow], LiveOptions(latency_budget_ms=1.0))
    result = session.run_session()
    run.close()

    assert result.error is None and result.ended == "the input ended" and result.input_frames == 90
    assert result.written == len(slow.numbers) <= result.seconds / CONSUMER_S + 2  # one write per 250 ms at most
    assert result.dropped_output >= result.processed - result.written - 1 > 0  # each frame the consumer missed
    assert result.processed + result.dropped_input == 90
    # Bounded, not growing with the frames behind: a frame waits for at most one frame being processed and one
    # being written before its own turn at each (a queue would have it wait for all of them: seconds by the end).
    latency, processing = result.latency["latency_p95_ms"], result.latency["processing_max_ms"]
    assert latency is not None and processing is not None
    assert latency < 2.5 * CONSUMER_S * 1000 + 2 * processing, result.latency
    assert slow.numbers == sorted(set(slow.numbers)) and slow.numbers[-1] >= 85
    raw = np.fromfile(seam, np.uint8).reshape(-1, 480 * 3 // 2, 640)
    assert len(raw) == result.written  # a loopback device would have got the same frames
    luma = raw[:, :480]
    assert [code_of(np.repeat(frame[:, :, None], 3, axis=2)) for frame in luma] == slow.numbers
    # 1 ms is out of reach: the ladder goes down one step per window of frames, never up, as far as the frames
    # this machine processed in the clip's 3 s take it (and no further than its last step).
    ladder, reached = session.ladder, len(result.ladder)
    assert reached == min(len(ladder.steps) - 1, result.processed // ladder.window) >= 1, result.processed
    assert [(change["frame"], change["step"]) for change in result.ladder] == [
        (ladder.window * step, step) for step in range(1, reached + 1)]
    assert result.final_step == ladder.steps[reached].describe()


def test_the_ladder_steps_down_over_budget_and_up_with_headroom() -> None:
    steps = steps_for(512, 5)
    assert steps == (Step(512, 5), Step(384, 5), Step(256, 5), Step(192, 5), Step(192, 10), Step(192, 20))
    ladder = LatencyLadder(steps, budget_ms=33.0, window=10)
    assert [ladder.observe(20.0) for _ in range(30)] == [None] * 30  # within budget at the top: stays
    moves = [ladder.observe(50.0) for _ in range(5)]
    assert moves == [None] * 4 + [Step(384, 5)]  # down once half the window is over budget (its median is)
    assert all(ladder.observe(25.0) is None for _ in range(40))  # within budget, without headroom: stays
    moves = [ladder.observe(10.0) for _ in range(30)]
    assert moves.count(Step(512, 5)) == 1 and moves.count(None) == 29  # up once the window's p95 has room
    assert [change.step for change in ladder.changes] == [1, 0]


def test_the_slot_keeps_only_the_newest_item() -> None:
    slot: LatestSlot[int] = LatestSlot()
    for item in range(5):
        slot.put(item)
    assert slot.take(0) == 4 and slot.dropped == 4 and slot.take(0) is None
    slot.put(5)
    slot.close()
    assert slot.take() == 5
    try:
        slot.take()
    except Closed:
        pass
    else:
        raise AssertionError("a closed, empty slot must say so")

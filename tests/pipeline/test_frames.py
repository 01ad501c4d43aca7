"""Frame-by-frame swapping: steady landmarks, untouched no-face frames, the right person when faces cross,
identity once per track, and reuse."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scenes import ASTRONAUT_FACE, GRACE_HOPPER_FACE, frame_loop, place
from slimfuse.bench.clips import make_clip, still
from slimfuse.metrics import psnr
from slimfuse.media.video_reader import VideoReader
from slimfuse.models.pool import ModelPool
from slimfuse.pipeline.frames import FrameLoop


def _swapper(pool: ModelPool, source: Path, **options: object) -> FrameLoop:
    return frame_loop(source, **options)


def _crossing(grace_hopper: np.ndarray, astronaut: np.ndarray, frames: int = 40) -> list[tuple[np.ndarray, list]]:
    """Two people walking past each other (the astronaut in front), with their face boxes."""
    clip = []
    for index in range(frames):
        canvas = np.full((360, 640, 3), 80, dtype=np.uint8)
        step = index / (frames - 1)
        hopper = place(canvas, grace_hopper, GRACE_HOPPER_FACE, 90, (int(120 + 400 * step), 170))
        collins = place(canvas, astronaut, ASTRONAUT_FACE, 90, (int(520 - 400 * step), 190))
        clip.append((canvas, [hopper, collins]))
    return clip


def test_render_leaves_the_callers_frame_alone_unless_told_to_overwrite_it(pool: ModelPool, astronaut_path: Path,
                                                                         grace_hopper: np.ndarray) -> None:
    canvas = np.full((360, 640, 3), 80, dtype=np.uint8)
    place(canvas, grace_hopper, GRACE_HOPPER_FACE, 110, (200, 180))
    place(canvas, grace_hopper, GRACE_HOPPER_FACE, 110, (460, 180))  # two faces: both pasted into one copy
    swapper = _swapper(pool, astronaut_path, face_selector_mode="many")
    targets = swapper.analyse(canvas, 0.0)
    assert len(targets) == 2
    frame = canvas.copy()
    rendered = swapper.render(frame, targets)
    assert rendered is not frame and np.array_equal(frame, canvas) and not np.array_equal(rendered, canvas)
    overwritten = swapper.render(frame, targets, overwrite=True)
    assert overwritten is frame and np.array_equal(frame, rendered)


def test_a_still_face_does_not_jitter(pool: ModelPool, grace_hopper: np.ndarray, astronaut_path: Path,
                                      tmp_path: Path) -> None:
    """On a clip made from a still photo (so only the encoder's noise changes between frames), the smoothed
    landmarks move at most 0.1 px per frame on average."""
    clip = make_clip(tmp_path / "still.mp4", still(grace_hopper, (640, 360), 40, face_px=160), crf=28)
    swapper = _swapper(pool, astronaut_path)
    previous = None
    motion = []
    with VideoReader(clip) as reader:
        for frame in reader:
            points = swapper.tracker.update(frame.rgb, frame.time)[0].face.landmarks[:, :2]
            if previous is not None and frame.index >= 5:
                motion.append(float(np.linalg.norm(points - previous, axis=1).mean()))
            previous = points
    assert len(motion) == 35 and np.mean(motion) <= 0.1


def test_frames_without_faces_pass_through_untouched(pool: ModelPool, grace_hopper: np.ndarray,
                                                     astronaut_path: Path) -> None:
    swapper = _swapper(pool, astronaut_path)
    empty = np.full((240, 320, 3), 60, dtype=np.uint8)
    empty[100:140, 100:220] = 200
    for index, frame in enumerate([empty, grace_hopper, empty]):
        out = swapper.process(frame, index / 25)
        assert (out is frame) == (frame is empty)
        if frame is empty:
            assert np.array_equal(out, empty)
    assert swapper.stats().frames == 3 and swapper.stats().frames_with_faces == 1


def test_reference_mode_keeps_the_chosen_person_when_faces_cross(pool: ModelPool, grace_hopper: np.ndarray,
                                                                 astronaut: np.ndarray, astronaut_path: Path,
                                                                 grace_hopper_path: Path) -> None:
    swapper = _swapper(pool, grace_hopper_path, face_selector_mode="reference", reference_face_image=astronaut_path)
    clip = _crossing(grace_hopper, astronaut)
    for index, (frame, (hopper, collins)) in enumerate(clip):
        changed = np.any(swapper.process(frame, index / 25) != frame, axis=2)
        hopper_only = changed[int(hopper[1]):int(hopper[3]), int(hopper[0]):int(hopper[2])].copy()
        x0, y0, x1, y1 = (int(v) for v in collins)
        # Where the two boxes overlap, pixels belong to the astronaut, who is in front.
        hopper_only[max(y0 - int(hopper[1]), 0):max(y1 - int(hopper[1]), 0),
                    max(x0 - int(hopper[0]), 0):max(x1 - int(hopper[0]), 0)] = False
        assert changed[y0:y1, x0:x1].mean() > 0.25, f"frame {index}: the astronaut was not swapped"
        assert hopper_only.mean() < 0.02, f"frame {index}: Grace Hopper was swapped"
    stats = swapper.stats()
    # Identity is computed per track (and on crossings), not once per face per frame.
    assert stats.identities_computed < len(clip)


def test_reuse_skips_the_generator_on_a_still_face_and_stays_close(pool: ModelPool, grace_hopper: np.ndarray,
                                                                   astronaut_path: Path) -> None:
    plain = _swapper(pool, astronaut_path)
    reusing = _swapper(pool, astronaut_path, reuse_threshold=4.0, reuse_max_frames=3)
    rng = np.random.default_rng(1)
    for index in range(12):
        frame = np.clip(grace_hopper.astype(np.int16) + rng.integers(-2, 3, grace_hopper.shape), 0, 255)
        frame = frame.astype(np.uint8)
        expected = plain.process(frame, index / 25)
        got = reusing.process(frame, index / 25)
        assert psnr(expected, got) > 35
    stats = reusing.stats()
    assert stats.generated + stats.reused == 12
    assert stats.reused >= 6 and stats.generated >= 3  # at most 3 reuses in a row
    assert plain.stats().reused == 0


@pytest.mark.parametrize("mode", ["one", "many"])
def test_one_mode_holds_its_choice(pool: ModelPool, grace_hopper: np.ndarray, astronaut: np.ndarray,
                                   astronaut_path: Path, mode: str) -> None:
    swapper = _swapper(pool, astronaut_path, face_selector_mode=mode)
    swapped_counts = []
    for index in range(10):
        canvas = np.full((360, 640, 3), 80, dtype=np.uint8)
        # Two faces of nearly the same size whose order by size alternates every frame.
        a = place(canvas, grace_hopper, GRACE_HOPPER_FACE, 100 + (index % 2) * 4, (170, 180))
        b = place(canvas, astronaut, ASTRONAUT_FACE, 102, (470, 180))
        changed = np.any(swapper.process(canvas, index / 25) != canvas, axis=2)
        swapped_counts.append([bool(changed[int(box[1]):int(box[3]), int(box[0]):int(box[2])].mean() > 0.25)
                               for box in (a, b)])
    if mode == "many":
        assert all(counts == [True, True] for counts in swapped_counts)
    else:
        assert all(counts == swapped_counts[0] for counts in swapped_counts) and sum(swapped_counts[0]) == 1


def test_a_small_face_that_walks_in_is_found_by_the_tile_scan(pool: ModelPool, grace_hopper: np.ndarray,
                                                              astronaut: np.ndarray, astronaut_path: Path) -> None:
    swapper = _swapper(pool, astronaut_path, face_selector_mode="many", face_detector_interval=2)
    base = np.full((853, 1280, 3), 80, dtype=np.uint8)
    place(base, grace_hopper, GRACE_HOPPER_FACE, 260, (330, 400))
    found_at = None
    for index in range(24):
        frame = base.copy()
        if index >= 3:  # a distant face, too small for a whole-frame search, walks in at frame 3
            place(frame, astronaut, ASTRONAUT_FACE, 70, (1000, 300))
        swapper.analyse(frame, index / 25)
        if found_at is None and len(swapper.tracker.tracks) == 2:
            found_at = index
    options = swapper.tracker.options
    assert found_at is not None and 3 <= found_at <= 3 + options.detect_interval * options.tile_scan_every
    detector = swapper.tracker.models.detector()
    assert len(detector.detect(frame, scan_tiles=False)) == 1 and len(detector.detect(frame)) == 2


def test_a_face_that_jumps_is_swapped_in_the_frame_it_lands_in(grace_hopper: np.ndarray, astronaut_path: Path) -> None:
    """A cut between detections: following loses the face, and the detector looks for it in that same frame, so
    no frame goes out with the original face."""
    swapper = frame_loop(astronaut_path)
    changed = []
    for index in range(9):
        canvas = np.full((360, 640, 3), 80, dtype=np.uint8)
        box = place(canvas, grace_hopper, GRACE_HOPPER_FACE, 120, (160 if index < 6 else 480, 180))
        out = swapper.process(canvas, index / 25)
        x0, y0, x1, y1 = (int(v) for v in box)
        changed.append(float((out[y0:y1, x0:x1] != canvas[y0:y1, x0:x1]).any(axis=2).mean()))
    assert min(changed) > 0.2, changed

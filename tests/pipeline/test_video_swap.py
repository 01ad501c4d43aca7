"""The video swap through the real command line, on clips made from the packaged photos."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest
from processes import read_until

from slimfuse.bench.clips import make_clip, pan, still
from slimfuse.cli.main import main
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.identity import SAME_PERSON_DISTANCE, IdentityModel, distance
from slimfuse.models.pool import ModelPool

SIZE = (640, 360)


def _frames(path: Path) -> tuple[list[int], list[np.ndarray], float | None]:
    """Video pts, decoded frames, and the audio duration in seconds (None without audio)."""
    with av.open(str(path)) as container:
        frames = [(frame.pts, frame.to_ndarray(format="rgb24")) for frame in container.decode(video=0)]
    with av.open(str(path)) as container:
        audio = None
        if container.streams.audio:
            samples = sum(frame.samples for frame in container.decode(audio=0))
            audio = samples / container.streams.audio[0].rate
    return [pts for pts, _ in frames], [rgb for _, rgb in frames], audio


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    folder = tmp_path_factory.mktemp("clips")
    return make_clip(folder / "pan.mp4", pan(grace_hopper, SIZE, 40), fps=25, audio=True)


def test_swap_keeps_timing_audio_and_puts_the_source_face_in(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             clip: Path, astronaut_path: Path, pool: ModelPool,
                                                             astronaut: np.ndarray) -> None:
    output = tmp_path / "out.mp4"
    code = main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(output), "--log-format", "json"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip() == str(output)
    summary = json.loads(captured.err.strip().splitlines()[-1])
    assert summary["event"] == "done" and summary["frames_written"] == 40 and summary["frames_with_faces"] == 40
    in_pts, in_frames, in_audio = _frames(clip)
    out_pts, out_frames, out_audio = _frames(output)
    assert out_pts == in_pts
    assert in_audio is not None and out_audio is not None and abs(out_audio - in_audio) < 0.05
    analyser, identity = FaceAnalyser(pool), IdentityModel(pool)
    source = identity.descriptor(astronaut, analyser.faces(astronaut)[0])
    for index in (3, 20, 36):
        swapped = identity.descriptor(out_frames[index], analyser.faces(out_frames[index])[0])
        original = identity.descriptor(in_frames[index], analyser.faces(in_frames[index])[0])
        assert distance(swapped, source) < SAME_PERSON_DISTANCE
        assert distance(swapped, source) < distance(swapped, original)
    assert [p.name for p in tmp_path.iterdir()] == ["out.mp4"]


def test_disk_mode_removes_its_temp_directory(tmp_path: Path, clip: Path, astronaut_path: Path) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    output = tmp_path / "out.mkv"
    code = main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(output), "--quiet",
                 "--temp-frame-format", "jpg", "--temp-path", str(temp), "--trim-frame-start", "5",
                 "--trim-frame-end", "25"])
    assert code == 0 and list(temp.iterdir()) == []
    pts, _, audio = _frames(output)
    assert len(pts) == 20 and audio is not None and abs(audio - 20 / 25) < 0.05


def test_truncated_video_keeps_what_decoded_beside_the_output(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                              grace_hopper: np.ndarray, astronaut_path: Path) -> None:
    # The index up front (as streaming uploads have it), so the cut file still opens and decodes partway.
    clip = make_clip(tmp_path / "whole.mp4", pan(grace_hopper, SIZE, 40), fps=25, audio=True, faststart=True)
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(clip.read_bytes()[: int(clip.stat().st_size * 0.6)])
    output = tmp_path / "out" / "result.mp4"
    output.parent.mkdir()
    code = main(["swap", "-s", str(astronaut_path), "-t", str(cut), "-o", str(output), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 33 and len(err.splitlines()) == 1
    assert str(cut) in err and "decoding stopped at frame" in err and "result.partial.mp4" in err
    assert not output.exists()
    kept = output.with_name("result.partial.mp4")
    stopped_at = int(err.split("decoding stopped at frame ")[1].split()[0])
    assert len(_frames(kept)[0]) == stopped_at > 5
    assert sorted(p.name for p in output.parent.iterdir()) == ["result.partial.mp4"]


def test_a_picture_output_for_a_video_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, clip: Path,
                                                 astronaut_path: Path) -> None:
    code = main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(tmp_path / "out.png")])
    assert code == 2 and "out.png" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_leaves_no_output_and_no_temp_files(tmp_path: Path, grace_hopper: np.ndarray, astronaut_path: Path,
                                                   stop: signal.Signals, code: int) -> None:
    clip = make_clip(tmp_path / "long.mp4", pan(grace_hopper, (1280, 720), 400), fps=25, audio=True)
    out = tmp_path / "out"
    temp = tmp_path / "temp"
    out.mkdir()
    temp.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "slimfuse", "swap", "-s", str(astronaut_path), "-t", str(clip),
         "-o", str(out / "result.mp4"), "--temp-frame-format", "bmp", "--temp-path", str(temp), "--log-format", "json"],
        stderr=subprocess.PIPE, text=True)
    try:
        assert read_until(process.stderr, '"event": "progress"'), "no progress line"  # under way, temp frames written
        process.send_signal(stop)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == code, err
    assert list(out.iterdir()) == [] and list(temp.iterdir()) == []


MEMORY_CHILD = """
import sys
from pathlib import Path
from slimfuse.memory.probe import peak_rss_mb
from slimfuse.cli.main import main
code = main(["swap", "-s", sys.argv[1], "-t", sys.argv[2], "-o", sys.argv[3], "--quiet"])
print(code, peak_rss_mb())
"""


def test_peak_memory_does_not_grow_with_video_length(tmp_path: Path, astronaut: np.ndarray,
                                                     grace_hopper_path: Path) -> None:
    peaks = {}
    for count in (150, 1500):
        clip = make_clip(tmp_path / f"still{count}.mp4", still(astronaut, (320, 240), count, face_px=90), audio=True)
        result = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(grace_hopper_path), str(clip),
                                 str(tmp_path / f"out{count}.mp4")], capture_output=True, text=True, check=True)
        code, peak = result.stdout.split()[-2:]
        assert code == "0"
        peaks[count] = float(peak)
    assert peaks[1500] <= peaks[150] * 1.10, peaks


def test_a_swapped_still_face_does_not_flicker(tmp_path: Path, grace_hopper: np.ndarray, astronaut_path: Path) -> None:
    """Mask and colour come from the smoothed mesh, so on a still shot the swapped face changes from frame to frame
    no more than the input does (its encoder noise), and its mean colour stays put."""
    clip = make_clip(tmp_path / "still.mp4", still(grace_hopper, SIZE, 30, face_px=160), crf=28)
    output = tmp_path / "out.mp4"
    assert main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(output), "--quiet",
                 "--output-video-quality", "100"]) == 0
    _, before, _ = _frames(clip)
    _, after, _ = _frames(output)
    face = (slice(SIZE[1] // 2 - 70, SIZE[1] // 2 + 70), slice(SIZE[0] // 2 - 60, SIZE[0] // 2 + 60))

    def change(frames: list[np.ndarray]) -> tuple[float, float]:
        steps = [(frames[i][face].astype(float), frames[i - 1][face].astype(float)) for i in range(5, len(frames))]
        pixels = float(np.mean([np.abs(a - b).mean() for a, b in steps]))
        colour = float(np.mean([np.abs(a.mean((0, 1)) - b.mean((0, 1))).mean() for a, b in steps]))
        return pixels, colour

    (input_pixels, _), (output_pixels, output_colour) = change(before), change(after)
    assert np.any(after[10][face] != before[10][face])
    assert output_pixels <= input_pixels and output_colour < 0.2


def test_opencv_runs_single_threaded_inside_the_block_and_as_before_after() -> None:
    import cv2

    from slimfuse.pipeline.video import opencv_threads

    before = cv2.getNumThreads()
    cv2.setNumThreads(3)
    try:
        with opencv_threads(1):
            assert cv2.getNumThreads() == 1
        assert cv2.getNumThreads() == 3
        with pytest.raises(RuntimeError), opencv_threads(1):
            raise RuntimeError("a failed frame")
        assert cv2.getNumThreads() == 3
    finally:
        cv2.setNumThreads(before)

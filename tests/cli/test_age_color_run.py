"""The age modifier and the frame colouriser through the command line, the Python API and a live session, with the
parity stand-ins placed as a user places the real files: no source photo is needed, the face is re-aged and the
whole frame coloured, in --processors order."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

import neural_models as nm
from live.streams import Frames, code_of, moving_face
from parity import standins
from scenes import GRACE_HOPPER_FACE
from slimfuse.bench.clips import make_clip
from slimfuse.cli.main import main
from slimfuse.config import RunConfig
from slimfuse.live.session import LiveOptions, LiveSession
from slimfuse.media.video_reader import VideoReader
from slimfuse.pipeline.run import build_run


def _place(models_dir: Path, *names: str) -> None:
    for name in names:
        standins.write(name, models_dir)
    nm.save(nm.fairface_by_tint(), models_dir, "fairface")


def _chroma(rgb: np.ndarray) -> float:
    """How far the picture's LAB a and b lie from grey, on average."""
    return float(np.abs(cv2.cvtColor(rgb, cv2.COLOR_RGB2LAB)[..., 1:].astype(int) - 128).mean())


def _face_change(before: np.ndarray, after: np.ndarray) -> float:
    x0, y0, x1, y1 = (int(value) for value in GRACE_HOPPER_FACE)
    return float(np.abs(after[y0:y1, x0:x1].astype(float) - before[y0:y1, x0:x1]).mean())


def test_the_command_line_ages_and_colours_without_a_source(tmp_path: Path, models_dir: Path, grace_hopper: np.ndarray,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    _place(models_dir, "fran", "deoldify")
    grey = cv2.cvtColor(cv2.cvtColor(grace_hopper, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    target, output = tmp_path / "grey.png", tmp_path / "out.png"
    Image.fromarray(grey).save(target)
    code = main(["swap", "-t", str(target), "-o", str(output), "--models-dir", str(models_dir), "--processors",
                 "age_modifier", "frame_colorizer", "--age-modifier-direction", "50", "--frame-colorizer-model",
                 "deoldify", "--frame-colorizer-size", "384x384"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.strip() == str(output)
    result = np.asarray(Image.open(output).convert("RGB"))
    assert _chroma(result) > 3 and _chroma(grey) < 0.5
    lightness = [cv2.cvtColor(image, cv2.COLOR_RGB2LAB)[..., 0].astype(int) for image in (grey, result)]
    assert np.abs(lightness[0][:60, :60] - lightness[1][:60, :60]).mean() < 1.5  # far from the face: only colour
    assert _face_change(grey, result) > 5


def test_a_picture_without_a_face_is_coloured_but_not_aged(tmp_path: Path, models_dir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A chain of frame stages alone needs no face (FaceFusion's colouriser works on any frame); a face stage on a
    picture without one is exit 9, as the swap is."""
    _place(models_dir, "fran", "ddcolor")
    picture = np.full((160, 240, 3), 120, np.uint8)
    picture[40:120, 60:180] = 30
    target = tmp_path / "plain.png"
    Image.fromarray(picture).save(target)
    common = ["swap", "-t", str(target), "--models-dir", str(models_dir), "--processors"]
    assert main([*common, "frame_colorizer", "-o", str(tmp_path / "coloured.png")]) == 0
    assert _chroma(np.asarray(Image.open(tmp_path / "coloured.png").convert("RGB"))) > 2
    assert main([*common, "age_modifier", "frame_colorizer", "-o", str(tmp_path / "aged.png")]) == 9
    assert "no face found in the target" in capsys.readouterr().err


def test_the_python_api_runs_them(models_dir: Path, grace_hopper: np.ndarray) -> None:
    from slimfuse.api import Swapper

    _place(models_dir, "styleganex_age", "ddcolor")
    aged = Swapper([], processors=["age_modifier"], age_modifier_model="styleganex_age", age_modifier_direction=40,
                   models_dir=models_dir)
    assert _face_change(grace_hopper, aged.swap_image(grace_hopper)) > 3
    coloured = Swapper([], processors=["frame_colorizer"], frame_colorizer_blend=50, models_dir=models_dir)
    result = coloured.swap_image(grace_hopper)
    assert result.shape == grace_hopper.shape and np.abs(result.astype(int) - grace_hopper).mean() > 2


def test_a_video_is_aged_and_coloured_frame_by_frame(tmp_path: Path, models_dir: Path, grace_hopper: np.ndarray,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _place(models_dir, "fran", "ddcolor")
    grey = cv2.cvtColor(cv2.cvtColor(grace_hopper, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    clip = make_clip(tmp_path / "grey.mp4", moving_face(grey, 8), fps=8, crf=12)
    output = tmp_path / "out.mp4"
    code = main(["swap", "-t", str(clip), "-o", str(output), "--models-dir", str(models_dir), "--processors",
                 "age_modifier", "frame_colorizer", "--age-modifier-direction", "-40"])
    assert code == 0, capsys.readouterr().err
    with VideoReader(clip) as originals, VideoReader(output) as outputs:
        pairs = [(original.rgb, result.rgb) for original, result in zip(originals, outputs, strict=True)]
    assert len(pairs) == 8
    for original, result in pairs:
        assert _chroma(result) > 3 and _chroma(original) < 1


def test_a_live_session_ages_and_colours(tmp_path: Path, models_dir: Path, grace_hopper: np.ndarray) -> None:
    _place(models_dir, "fran", "ddcolor")
    grey = cv2.cvtColor(cv2.cvtColor(grace_hopper, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    frames = moving_face(grey, 12)
    clip = make_clip(tmp_path / "camera.mp4", frames, fps=12, crf=12)
    run = build_run(RunConfig.from_options([], processors=["age_modifier", "frame_colorizer"], models_dir=models_dir))
    output = Frames()
    result = LiveSession(run, str(clip), [lambda size, fps: output], LiveOptions(latency_budget_ms=10_000.0)
                         ).run_session()
    run.close()
    assert result.error is None and result.processed >= 1 and output.frames
    shown = output.frames[0]
    assert _chroma(shown) > 3
    source = frames[code_of(shown)]
    lightness = [cv2.cvtColor(image, cv2.COLOR_RGB2LAB)[..., 0].astype(float) for image in (source, shown)]
    difference = np.abs(lightness[0] - lightness[1])[:480 // 32 * 32, :640 // 32 * 32]
    blocks = difference.reshape(15, 32, 20, 32).mean(axis=(1, 3))
    assert blocks.max() > 5.0 and np.median(blocks) < 3.0  # the face re-aged, the rest only coloured

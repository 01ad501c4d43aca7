"""The deep swapper as a stage of the chain: `slimfuse swap --processors deep_swapper` with no source photo (a
published name placed in --models-dir, a user's .dfm by path, after the face enhancer's turn in FaceFusion's order),
and a live session over a clip."""
from __future__ import annotations

import shutil
from pathlib import Path

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
from slimfuse.pipeline.run import build_run

PUBLISHED = standins.DEEP_SWAPPERS[0].name


def _swap(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["swap", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _face_change(before: np.ndarray, after: np.ndarray) -> float:
    x0, y0, x1, y1 = (int(value) for value in GRACE_HOPPER_FACE)
    return float(np.abs(after[y0:y1, x0:x1].astype(float) - before[y0:y1, x0:x1]).mean())


def test_a_published_name_swaps_without_a_source(tmp_path: Path, models_dir: Path, grace_hopper_path: Path,
                                                 grace_hopper: np.ndarray, capsys: pytest.CaptureFixture[str]) -> None:
    standins.write(PUBLISHED, models_dir)
    output = tmp_path / "out.png"
    code, out, err = _swap(capsys, "-t", str(grace_hopper_path), "-o", str(output), "--models-dir", str(models_dir),
                           "--processors", "deep_swapper")
    assert code == 0, err
    assert out.strip() == str(output)
    result = np.asarray(Image.open(output).convert("RGB"))
    assert _face_change(grace_hopper, result) > 3.0
    assert np.array_equal(result[:60, :60], grace_hopper[:60, :60])  # nothing changes far from the face


def test_a_file_by_path_runs_with_other_stages(tmp_path: Path, models_dir: Path, grace_hopper_path: Path,
                                               grace_hopper: np.ndarray, capsys: pytest.CaptureFixture[str]) -> None:
    own = tmp_path / "mine" / "me.dfm"
    own.parent.mkdir()
    shutil.copyfile(standins.write(standins.USER_DFM.name, tmp_path / "built"), own)
    nm.save(nm.identity_enhancer("gfpgan_1.4"), models_dir, "gfpgan_1.4")
    output = tmp_path / "out.png"
    code, _, err = _swap(capsys, "-t", str(grace_hopper_path), "-o", str(output), "--models-dir", str(models_dir),
                         "--processors", "deep_swapper", "face_enhancer", "face_debugger",
                         "--deep-swapper-file", str(own), "--deep-swapper-morph", "30")
    assert code == 0, err
    assert _face_change(grace_hopper, np.asarray(Image.open(output).convert("RGB"))) > 3.0
    assert own.is_file()  # used where it is
    missing = tmp_path / "absent.dfm"
    code, _, err = _swap(capsys, "-t", str(grace_hopper_path), "-o", str(tmp_path / "no.png"), "--processors",
                         "deep_swapper", "--deep-swapper-file", str(missing))
    assert code == 14 and str(missing) in err and len(err.strip().splitlines()) == 1


def test_a_live_session_runs_the_deep_swapper(tmp_path: Path, models_dir: Path, grace_hopper: np.ndarray) -> None:
    standins.write(PUBLISHED, models_dir)
    frames = moving_face(grace_hopper, 12)
    clip = make_clip(tmp_path / "camera.mp4", frames, fps=12, crf=12)
    run = build_run(RunConfig.from_options([], processors=["deep_swapper"], models_dir=models_dir))
    assert run.reuse_options().threshold == 2  # a neural model makes the faces: reused as a neural swapper's
    output = Frames()
    result = LiveSession(run, str(clip), [lambda size, fps: output], LiveOptions(latency_budget_ms=10_000.0)
                         ).run_session()
    run.close()
    assert result.error is None and result.processed >= 1 and output.frames
    first = frames[code_of(output.frames[0])]
    blocks = np.abs(output.frames[0].astype(float) - first).mean(axis=2)
    blocks = blocks[:480 // 32 * 32, :640 // 32 * 32].reshape(15, 32, 20, 32).mean(axis=(1, 3))
    assert blocks.max() > 10.0 and np.median(blocks) < 3.0  # the face swapped, the rest as the codec left it


def test_the_python_api_runs_it(tmp_path: Path, models_dir: Path, grace_hopper: np.ndarray) -> None:
    from slimfuse.api import Swapper

    standins.write(standins.DEEP_SWAPPERS[1].name, models_dir)  # a published file without a morph input
    swapper = Swapper([], processors=["deep_swapper"], deep_swapper_model=standins.DEEP_SWAPPERS[1].name,
                      models_dir=models_dir)
    assert _face_change(grace_hopper, swapper.swap_image(grace_hopper)) > 3.0

"""The expression restorer and the face editor as stages of the chain, through the real command line, with the
live_portrait parity stand-ins placed in --models-dir: each changes the face and nothing outside it, the restorer
after a swap, the editor with no source photo at all; the stage registry lists their models for the memory plan."""
from __future__ import annotations

from pathlib import Path

import av
import numpy as np
from PIL import Image

from parity import standins
from slimfuse.api import Swapper
from slimfuse.bench.clips import make_clip, pan
from slimfuse.cli.main import main
from slimfuse.config import RunConfig
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.live_portrait import EDITOR_MODELS, RESTORER_MODELS
from slimfuse.pipeline.chain import ChainSpec


def _place(folder: Path) -> None:
    for contract in standins.LIVE_PORTRAIT:
        standins.write(contract.name, folder)


def _run(output: Path, *arguments: str) -> np.ndarray:
    assert main(["swap", "-o", str(output), "--quiet", *arguments]) == 0
    with Image.open(output) as image:
        return np.asarray(image.convert("RGB"))


def _changed(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    return np.abs(before.astype(int) - after.astype(int)).max(axis=2) > 0


def test_the_restorer_changes_the_swapped_face_only(models_dir: Path, tmp_path: Path, astronaut_path: Path,
                                                    grace_hopper_path: Path) -> None:
    _place(models_dir)
    common = ("-s", str(grace_hopper_path), "-t", str(astronaut_path), "--models-dir", str(models_dir))
    swapped = _run(tmp_path / "swapped.png", *common, "--processors", "face_swapper")
    restored = _run(tmp_path / "restored.png", *common, "--processors", "face_swapper", "expression_restorer")
    changed = _changed(swapped, restored)
    assert 0.01 < changed.mean() < 0.5  # the face, not the frame
    rows, columns = np.nonzero(changed)
    assert 100 < columns.mean() < 400 and 50 < rows.mean() < 350  # around the astronaut's face


def test_the_editor_needs_no_source_and_its_values_move_the_face(models_dir: Path, tmp_path: Path,
                                                                 astronaut_path: Path) -> None:
    _place(models_dir)
    common = ("-t", str(astronaut_path), "--models-dir", str(models_dir), "--processors", "face_editor")
    plain = _run(tmp_path / "plain.png", *common)
    smiling = _run(tmp_path / "smiling.png", *common, "--face-editor-mouth-smile", "1", "--face-editor-head-yaw",
                   "0.5")
    with Image.open(astronaut_path) as image:
        astronaut = np.asarray(image.convert("RGB"))
    assert 0.01 < _changed(astronaut, plain).mean() < 0.6
    assert _changed(plain, smiling).mean() > 0.01


def test_the_registry_lists_their_models() -> None:
    config = RunConfig.from_options([], processors=["face_swapper", "expression_restorer", "face_editor"])
    models = ChainSpec.of(config).models(Catalog())
    assert set(RESTORER_MODELS["live_portrait"]) | set(EDITOR_MODELS["live_portrait"]) <= set(models)


def test_a_video_goes_through_both(models_dir: Path, tmp_path: Path, astronaut_path: Path,
                                   grace_hopper: np.ndarray) -> None:
    """Every frame of a short clip through the swapper, the restorer and the editor (frames in chunks, each face's
    original cut from the frame as it came in): every frame is there, each face far from the swap alone."""
    _place(models_dir)
    clip = make_clip(tmp_path / "pan.mp4", pan(grace_hopper, (320, 240), 8), fps=25, audio=False)
    common = ("-s", str(astronaut_path), "-t", str(clip), "--quiet", "--models-dir", str(models_dir))
    assert main(["swap", *common, "-o", str(tmp_path / "swap.mp4"), "--processors", "face_swapper"]) == 0
    assert main(["swap", *common, "-o", str(tmp_path / "all.mp4"), "--processors", "face_swapper",
                 "expression_restorer", "face_editor", "--face-editor-mouth-smile", "0.5"]) == 0
    with av.open(str(tmp_path / "swap.mp4")) as swapped, av.open(str(tmp_path / "all.mp4")) as edited:
        pairs = [(first.to_ndarray(format="rgb24").astype(int), second.to_ndarray(format="rgb24").astype(int))
                 for first, second in zip(swapped.decode(video=0), edited.decode(video=0), strict=True)]
    assert len(pairs) == 8
    for first, second in pairs:
        assert (np.abs(first - second).max(axis=2) > 24).mean() > 0.05  # beyond what the codec changes


def test_the_python_api_edits_without_a_source(models_dir: Path, astronaut: np.ndarray) -> None:
    """Swapper([], processors=["face_editor"], ...) edits the target's own face and leaves the rest."""
    _place(models_dir)
    with Swapper([], processors=["face_editor"], models_dir=models_dir, face_editor_eye_open_ratio=-1.0) as editor:
        edited = editor.swap_image(astronaut)
    changed = _changed(astronaut, edited)
    assert 0.01 < changed.mean() < 0.6

"""Golden outputs: the image and video swaps of a fixed set of inputs, through the command line, compared with the
outputs stored in tests/golden/. They pin what the pipeline produces, so a change of its structure provably does
not move a pixel (a change that improves the pictures on purpose regenerates them: SLIMFUSE_WRITE_GOLDEN=1).

The neural cases use stand-ins defined here (not the shared ones in neural_models.py), whose output depends on the
target crop and on the source vector, so the golden files depend only on the pipeline.
"""
from __future__ import annotations

import os
from pathlib import Path

import av
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

import neural_models as nm

from slimfuse.bench.clips import make_clip, pan
from slimfuse.cli.main import main
from slimfuse.metrics import psnr

GOLDEN = Path(__file__).parent
WRITE = os.environ.get("SLIMFUSE_WRITE_GOLDEN") == "1"
VIDEO_SIZE = (320, 240)
VIDEO_FRAMES = 12
KEPT_FRAMES = (0, 5, 11)
# Encoded outputs are compared after decoding; x264 is deterministic for the same settings, the margin covers a
# different FFmpeg build.
MIN_PSNR_DB = 45.0


def _swapper(name: str) -> onnx.ModelProto:
    """A swapper whose output is 0.8 x its target plus a per-channel shift from the first three source values, with
    the 512 x 512 emap as its last initializer when the swapper has one."""
    spec = nm.spec_of(name)
    assert spec.io is not None
    target, source = spec.io.inputs[0], spec.io.inputs[1]
    nodes = [
        helper.make_node("Slice", ["source", "g_start", "g_end", "g_axis"], ["g_first"]),
        helper.make_node("Reshape", ["g_first", "g_shape"], ["g_shift"]),
        helper.make_node("Sigmoid", ["g_shift"], ["g_sig"]),
        helper.make_node("Mul", ["g_sig", "g_quarter"], ["g_add"]),
        helper.make_node("Mul", ["target", "g_scale"], ["g_scaled"]),
        helper.make_node("Add", ["g_scaled", "g_add"], [spec.io.outputs[0].name]),
    ]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "g_start"),
             numpy_helper.from_array(np.array([3], np.int64), "g_end"),
             numpy_helper.from_array(np.array([1], np.int64), "g_axis"),
             numpy_helper.from_array(np.array([1, 3, 1, 1], np.int64), "g_shape"),
             numpy_helper.from_array(np.array(0.25, np.float32), "g_quarter"),
             numpy_helper.from_array(np.array(0.8, np.float32), "g_scale"),
             numpy_helper.from_array(np.random.default_rng(4).normal(0, 1 / np.sqrt(512), (512, 512))
                                     .astype(np.float32), "emap")]
    values = [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, list(t.shape)) for t in (target, source)]
    out = spec.io.outputs[0]
    return nm.graph_model(name, nodes, values, [helper.make_tensor_value_info(out.name, TensorProto.FLOAT,
                                                                              list(out.shape))], inits)


def _enhancer(name: str = "gfpgan_1.4") -> onnx.ModelProto:
    """An enhancer that pulls its input towards mid-grey: 0.9 x input."""
    return nm.image_model(name, "Mul", 0.9)


@pytest.fixture
def neural_dir(models_dir: Path) -> Path:
    nm.save(_swapper("inswapper_128"), models_dir, "inswapper_128")
    nm.save(_enhancer(), models_dir, "gfpgan_1.4")
    nm.save(nm.recognizer(), models_dir, "arcface_w600k_r50")
    return models_dir


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    return make_clip(tmp_path_factory.mktemp("golden") / "pan.mp4", pan(grace_hopper, VIDEO_SIZE, VIDEO_FRAMES),
                     fps=25)


def _swap(sources: list[Path], target: Path, output: Path, *options: str) -> None:
    code = main(["swap", "--quiet", "-s", *map(str, sources), "-t", str(target), "-o", str(output), *options])
    assert code == 0


def _decoded(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def _check(name: str, frames: list[np.ndarray]) -> None:
    """Compare `frames` with tests/golden/NAME.png (the frames stacked vertically), or write it."""
    stacked = np.concatenate(frames, axis=0)
    golden = GOLDEN / f"{name}.png"
    if WRITE:
        Image.fromarray(stacked).save(golden, optimize=True)
    expected = np.asarray(Image.open(golden).convert("RGB"))
    assert expected.shape == stacked.shape
    assert psnr(stacked, expected) >= MIN_PSNR_DB, f"{name}: {psnr(stacked, expected):.1f} dB from the golden output"


def test_mesh_image(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path) -> None:
    output = tmp_path / "out.png"
    _swap([astronaut_path], grace_hopper_path, output)
    _check("mesh_image", [np.asarray(Image.open(output).convert("RGB"))])


def test_mesh_video(tmp_path: Path, astronaut_path: Path, clip: Path) -> None:
    output = tmp_path / "out.mp4"
    _swap([astronaut_path], clip, output)
    frames = _decoded(output)
    assert len(frames) == VIDEO_FRAMES
    _check("mesh_video", [frames[index] for index in KEPT_FRAMES])


def test_neural_image(tmp_path: Path, neural_dir: Path, grace_hopper_path: Path, astronaut_path: Path) -> None:
    output = tmp_path / "out.png"
    _swap([grace_hopper_path], astronaut_path, output, "--models-dir", str(neural_dir),
          "--face-swapper-model", "inswapper_128", "--face-enhancer-model", "gfpgan_1.4")
    _check("neural_image", [np.asarray(Image.open(output).convert("RGB"))])


@pytest.mark.parametrize("level", ["1", "2"])
def test_neural_video(tmp_path: Path, neural_dir: Path, astronaut_path: Path, clip: Path, level: str) -> None:
    """Levels 1 (streaming) and 2 (chunks, one generator at a time) give the same frames, so they share one file."""
    output = tmp_path / "out.mp4"
    _swap([astronaut_path], clip, output, "--models-dir", str(neural_dir), "--face-swapper-model", "inswapper_128",
          "--face-enhancer-model", "gfpgan_1.4", "--video-memory-level", level)
    frames = _decoded(output)
    assert len(frames) == VIDEO_FRAMES
    _check("neural_video", [frames[index] for index in KEPT_FRAMES])

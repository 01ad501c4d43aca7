"""Golden outputs: the image and video swaps of a fixed set of inputs, through the command line, compared with the
outputs stored in tests/golden/. They pin what the pipeline produces, so a change of its structure provably does
not move the swapped face (a change that improves the pictures on purpose regenerates them:
SLIMFUSE_WRITE_GOLDEN=1).

What is compared, and why it holds on any x86-64 or ARM machine:
- Video frames are the RGB frames the pipeline hands to the video writer, recorded before the encoder (x264 and
  libswscale take other SIMD paths on other CPUs, and their last bits differ). The input clip is lossless too (PNG
  frames in a .mov, decoded to RGB without a colour conversion), so the pipeline sees exactly the frames the test
  drew. Image outputs are PNG files, already lossless.
- Only the pixels the swap changed count: those where the output or the golden output differs from the target
  (`Comparison`). Elsewhere both equal the target, so they agree exactly; over the whole frame the face would be a
  small share and a change of it would vanish in the average.
- Inside that region the mean difference of each channel must stay within MAX_CHANNEL_SHIFT of zero, and the mean
  absolute difference within MAX_MEAN_ABS. ONNX Runtime, OpenCV and numpy round differently on other CPUs: a
  landmark moves by a fraction of a pixel, a blend weight by its last bit, so single pixels of a textured face
  change by a level or a few, in both directions. A change of the swap itself moves the whole face one way: one
  grey level more gives a mean difference of 1.0 in every channel, four times MAX_CHANNEL_SHIFT
  (every test checks that its outputs, so shifted, fail). MAX_REGION_CHANGE bounds how many pixels may join or
  leave the changed region (the mask's edge moving with the landmarks), so a swap that paints elsewhere fails too.

The neural cases use stand-ins defined here (not the shared ones in neural_models.py), whose output depends on the
target crop and on the source vector, so the golden files depend only on the pipeline.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

import neural_models as nm

from slimfuse.bench.clips import pan
from slimfuse.cli.main import main
from slimfuse.media.video_reader import VideoFrame
from slimfuse.media.video_writer import VideoWriter

GOLDEN = Path(__file__).parent
WRITE = os.environ.get("SLIMFUSE_WRITE_GOLDEN") == "1"
VIDEO_SIZE = (320, 240)
VIDEO_FRAMES = 12
KEPT_FRAMES = (0, 5, 11)
MAX_CHANNEL_SHIFT = 0.25
"""Levels: the largest mean difference of one channel over the changed region (a one-level shift gives 1.0)."""
MAX_MEAN_ABS = 0.5
"""Levels: the largest mean absolute difference over the changed region (a one-level shift gives 1.0)."""
MAX_REGION_CHANGE = 0.05
"""The share of the changed region that may be changed in one output and not in the other."""


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
def clip_frames(grace_hopper: np.ndarray) -> list[np.ndarray]:
    return list(pan(grace_hopper, VIDEO_SIZE, VIDEO_FRAMES))


def _lossless_clip(path: Path, frames: list[np.ndarray], fps: int = 25) -> Path:
    """`frames` as PNG pictures in a .mov: they decode to the same RGB bytes on every machine."""
    height, width = frames[0].shape[:2]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("png", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "rgb24"
        for index, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, clip_frames: list[np.ndarray]) -> Path:
    path = _lossless_clip(tmp_path_factory.mktemp("golden") / "pan.mov", clip_frames)
    decoded = _decoded(path)
    assert len(decoded) == VIDEO_FRAMES and all(np.array_equal(a, b) for a, b in zip(decoded, clip_frames, strict=True))
    return path


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> dict[int, np.ndarray]:
    """The RGB frames the pipeline hands to the video writer, by frame index (recorded, then encoded as usual)."""
    frames: dict[int, np.ndarray] = {}
    write = VideoWriter.write

    def recording(self: VideoWriter, frame: VideoFrame) -> None:
        assert frame.index not in frames, f"frame {frame.index} written twice"
        frames[frame.index] = frame.rgb.copy()
        write(self, frame)

    monkeypatch.setattr(VideoWriter, "write", recording)
    return frames


def _swap(sources: list[Path], target: Path, output: Path, *options: str) -> None:
    code = main(["swap", "--quiet", "-s", *map(str, sources), "-t", str(target), "-o", str(output), *options])
    assert code == 0


def _decoded(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def _rgb(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


@dataclass(frozen=True)
class Comparison:
    """An output against the golden output of the same target, over the pixels the swap changed in either."""

    region: int
    """Pixels in the region: where the output or the golden output differs from the target."""
    only_one: int
    """Pixels of the region changed in only one of the two."""
    channel_shift: tuple[float, float, float]
    """Mean of output - golden over the region, per channel (R, G, B), in levels."""
    mean_abs: float
    """Mean of |output - golden| over the region and the channels, in levels."""
    max_abs: int

    @classmethod
    def of(cls, output: np.ndarray, golden: np.ndarray, target: np.ndarray) -> Comparison:
        assert output.shape == golden.shape == target.shape
        changed, was_changed = (output != target).any(axis=-1), (golden != target).any(axis=-1)
        region = changed | was_changed
        difference = output[region].astype(np.int16) - golden[region].astype(np.int16)
        if not region.any():
            return cls(0, 0, (0.0, 0.0, 0.0), 0.0, 0)
        shift = difference.mean(axis=0)
        return cls(int(region.sum()), int((changed ^ was_changed).sum()),
                   (float(shift[0]), float(shift[1]), float(shift[2])), float(np.abs(difference).mean()),
                   int(np.abs(difference).max()))

    def failures(self) -> list[str]:
        found = []
        if self.region == 0:
            found.append("the swap changed no pixel")
        if max(abs(shift) for shift in self.channel_shift) > MAX_CHANNEL_SHIFT:
            found.append(f"mean difference per channel over {MAX_CHANNEL_SHIFT} levels")
        if self.mean_abs > MAX_MEAN_ABS:
            found.append(f"mean absolute difference over {MAX_MEAN_ABS} levels")
        if self.only_one > MAX_REGION_CHANGE * self.region:
            found.append(f"over {MAX_REGION_CHANGE:.0%} of the changed pixels changed in only one output")
        return found

    def __str__(self) -> str:
        shift = ", ".join(f"{value:+.3f}" for value in self.channel_shift)
        return (f"{self.region} px changed, {self.only_one} in only one; mean difference ({shift}), "
                f"mean |difference| {self.mean_abs:.3f}, max {self.max_abs}")


def compare(outputs: list[np.ndarray], goldens: list[np.ndarray], targets: list[np.ndarray]) -> list[str]:
    """What is wrong with each output against its golden output (an empty list: they agree)."""
    problems = []
    for index, (output, golden, target) in enumerate(zip(outputs, goldens, targets, strict=True)):
        comparison = Comparison.of(output, golden, target)
        problems += [f"picture {index}: {failure} ({comparison})" for failure in comparison.failures()]
    return problems


def _stacked(name: str) -> Path:
    return GOLDEN / f"{name}.png"


def _goldens(name: str, count: int, height: int) -> list[np.ndarray]:
    stacked = _rgb(_stacked(name))
    assert stacked.shape[0] == count * height, f"{name}.png holds {stacked.shape[0] / height} pictures, not {count}"
    return list(np.split(stacked, count, axis=0))


def shifted(output: np.ndarray, target: np.ndarray, levels: int) -> np.ndarray:
    """`output` with the pixels the swap changed (those that differ from `target`) `levels` grey levels lighter."""
    changed = (output != target).any(axis=-1)
    out = output.copy()
    out[changed] = np.clip(output[changed].astype(np.int16) + levels, 0, 255).astype(np.uint8)
    return out


def _check(name: str, outputs: list[np.ndarray], targets: list[np.ndarray]) -> None:
    """Compare `outputs` with tests/golden/NAME.png (the outputs stacked vertically), or write it. The same
    outputs with the swapped face one grey level lighter or darker must fail: the comparison, with this machine's
    rounding in the outputs, still sees a one-level change of the swap."""
    if WRITE:
        Image.fromarray(np.concatenate(outputs, axis=0)).save(_stacked(name), optimize=True)
    goldens = _goldens(name, len(outputs), outputs[0].shape[0])
    problems = compare(outputs, goldens, targets)
    assert not problems, f"{name} differs from its golden output:\n" + "\n".join(problems)
    for levels in (1, -1):
        for index, (output, golden, target) in enumerate(zip(outputs, goldens, targets, strict=True)):
            comparison = Comparison.of(shifted(output, target, levels), golden, target)
            assert comparison.failures(), f"{name}, picture {index}: the swapped face {levels:+d} level passes " \
                                          f"the comparison ({comparison})"


def _check_video(name: str, written: dict[int, np.ndarray], output: Path, clip_frames: list[np.ndarray]) -> None:
    assert sorted(written) == list(range(VIDEO_FRAMES))
    assert len(_decoded(output)) == VIDEO_FRAMES
    _check(name, [written[index] for index in KEPT_FRAMES], [clip_frames[index] for index in KEPT_FRAMES])


def test_mesh_image(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path) -> None:
    output = tmp_path / "out.png"
    _swap([astronaut_path], grace_hopper_path, output)
    _check("mesh_image", [_rgb(output)], [_rgb(grace_hopper_path)])


def test_mesh_video(tmp_path: Path, astronaut_path: Path, clip: Path, clip_frames: list[np.ndarray],
                    written: dict[int, np.ndarray]) -> None:
    output = tmp_path / "out.mp4"
    _swap([astronaut_path], clip, output)
    _check_video("mesh_video", written, output, clip_frames)


def test_neural_image(tmp_path: Path, neural_dir: Path, grace_hopper_path: Path, astronaut_path: Path) -> None:
    output = tmp_path / "out.png"
    _swap([grace_hopper_path], astronaut_path, output, "--models-dir", str(neural_dir),
          "--face-swapper-model", "inswapper_128", "--face-enhancer-model", "gfpgan_1.4")
    _check("neural_image", [_rgb(output)], [_rgb(astronaut_path)])


@pytest.mark.parametrize("level", ["1", "2"])
def test_neural_video(tmp_path: Path, neural_dir: Path, astronaut_path: Path, clip: Path,
                      clip_frames: list[np.ndarray], written: dict[int, np.ndarray], level: str) -> None:
    """Levels 1 (streaming) and 2 (chunks, one generator at a time) give the same frames, so they share one file."""
    output = tmp_path / "out.mp4"
    _swap([astronaut_path], clip, output, "--models-dir", str(neural_dir), "--face-swapper-model", "inswapper_128",
          "--face-enhancer-model", "gfpgan_1.4", "--video-memory-level", level)
    _check_video("neural_video", written, output, clip_frames)

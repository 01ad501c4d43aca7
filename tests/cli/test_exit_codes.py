"""Exit codes the other tests reach only by raising the error, here through the real command line on real
conditions: one line naming the file, the documented code, nothing written."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import neural_models as nm
from slimfuse.bench.clips import audio_only, make_clip, no_frames, pan
from slimfuse.cli.main import main
from slimfuse.errors import EXIT_CODES
from slimfuse.media.image_io import MAX_PIXELS
from slimfuse.faces.analyse import FaceAnalyser


def _one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("slimfuse: ") and "Traceback" not in captured.err, captured.err
    assert code in EXIT_CODES
    return code, lines[0]


def _png_header_only(path: Path, width: int, height: int) -> Path:
    """A PNG that says it is width x height grey pixels: its header, one empty data chunk, its end."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) +
                     chunk(b"IEND", b""))
    return path


def test_an_image_too_large_is_16(capsys: pytest.CaptureFixture[str], tmp_path: Path, astronaut_path: Path) -> None:
    huge = _png_header_only(tmp_path / "huge.png", 20000, 14000)
    assert 20000 * 14000 > MAX_PIXELS
    code, line = _one_line(capsys, ["swap", "-s", str(astronaut_path), "-t", str(huge),
                                    "-o", str(tmp_path / "o.png")])
    assert code == 16 and str(huge) in line and "280000000 pixels" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.png"]


def test_a_folder_that_refuses_new_files_is_13(capsys: pytest.CaptureFixture[str], astronaut_path: Path,
                                               grace_hopper_path: Path) -> None:
    """sysfs refuses new files even to root, so this holds wherever the tests run."""
    output = Path("/sys/slimfuse-out.png")
    code, line = _one_line(capsys, ["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path),
                                    "-o", str(output)])
    assert code == 13 and str(output) in line and not output.exists()


def _branching_model(path: Path) -> Path:
    """A valid ONNX model with an If node (control flow, which the fp16 conversion does not take)."""
    def branch(name: str, op: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node(op, ["x"], [f"{name}_out"])], name, [],
                                 [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1, 4])])

    nodes = [helper.make_node("Constant", [], ["cond"], value=numpy_helper.from_array(np.array(True))),
             helper.make_node("If", ["cond"], ["y"], then_branch=branch("then", "Identity"),
                              else_branch=branch("else", "Neg"))]
    model = nm.graph_model("branching", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(model, str(path))
    return path


def test_a_model_that_cannot_be_converted_is_20(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    model = _branching_model(tmp_path / "branching.onnx")
    code, line = _one_line(capsys, ["optimize", str(model), "--fp16"])
    assert code == 20 and str(model) in line and "control flow" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["branching.onnx"]


@pytest.fixture
def videos(tmp_path: Path, grace_hopper: np.ndarray) -> dict[str, Path]:
    clip = make_clip(tmp_path / "clip.mkv", pan(grace_hopper, (160, 120), 3), fps=25)
    alien = tmp_path / "alien.mkv"  # the same file with a codec id no decoder knows
    alien.write_bytes(clip.read_bytes().replace(b"V_MPEG4/ISO/AVC", b"V_MPEG4/ISO/XYZ"))
    return {"audio only": audio_only(tmp_path / "voice.mp4"), "no frames": no_frames(tmp_path / "empty.avi"),
            "unknown codec": alien}


VIDEO_CASES = [("audio only", 30, "audio-only"), ("no frames", 31, "no frames"),
               ("unknown codec", 32, "no decoder")]


@pytest.mark.parametrize(("case", "expected", "words"), VIDEO_CASES, ids=[case for case, _, _ in VIDEO_CASES])
def test_videos_without_frames_to_swap(capsys: pytest.CaptureFixture[str], tmp_path: Path, astronaut_path: Path,
                                       videos: dict[str, Path], case: str, expected: int, words: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code, line = _one_line(capsys, ["swap", "-s", str(astronaut_path), "-t", str(videos[case]),
                                    "-o", str(out / "result.mp4")])
    assert code == expected and str(videos[case]) in line and words in line.lower()
    assert list(out.iterdir()) == []


def test_an_internal_failure_is_1_with_the_hint_and_debug_shows_it(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path, astronaut_path: Path,
                                                                  grace_hopper_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 1 is for slimfuse's own bugs, which no input should reach (each one found is fixed), so the failure is
    planted: the image pipeline's face analysis breaks as a bug would."""
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("planted bug")

    monkeypatch.setattr(FaceAnalyser, "faces", broken)
    argv = ["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(tmp_path / "o.png")]
    code, line = _one_line(capsys, argv)
    assert code == 1 and line == ("slimfuse: internal error: RuntimeError: planted bug "
                                  "(run with --debug for details)")
    assert main([*argv, "--debug"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "planted bug" in err and err.splitlines()[-1] == line
    assert list(tmp_path.iterdir()) == []

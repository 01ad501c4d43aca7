"""Bad input through the real command line: one line naming the file, a documented exit code, no output,
inputs untouched."""
from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from processes import wait_for

from slimfuse.cli.main import main
from slimfuse.errors import EXIT_CODES


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["swap", *args])
    return code, capsys.readouterr().err


@pytest.fixture
def inputs(tmp_path: Path, grace_hopper_path: Path, astronaut_path: Path) -> dict[str, Path]:
    folder = tmp_path / "in"
    folder.mkdir()
    source = folder / "source.png"
    target = folder / "target.jpg"
    source.write_bytes(astronaut_path.read_bytes())
    target.write_bytes(grace_hopper_path.read_bytes())
    empty = folder / "empty.jpg"
    empty.touch()
    truncated = folder / "truncated.jpg"
    truncated.write_bytes(grace_hopper_path.read_bytes()[:4000])
    corrupt = folder / "corrupt.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(2000))
    text = folder / "notes.txt"
    text.write_text("not a picture")
    no_face = folder / "sky.png"
    Image.fromarray(np.asarray(Image.open(grace_hopper_path))[:250, :130]).save(no_face)
    return {"source": source, "target": target, "empty": empty, "truncated": truncated, "corrupt": corrupt,
            "text": text, "no_face": no_face, "folder": folder}


CASES = [
    ("missing source", lambda i: ["-s", str(i["folder"] / "absent.jpg"), "-t", str(i["target"])], 3,
     lambda i: i["folder"] / "absent.jpg"),
    ("directory as source", lambda i: ["-s", str(i["folder"]), "-t", str(i["target"])], 4, lambda i: i["folder"]),
    ("empty target", lambda i: ["-s", str(i["source"]), "-t", str(i["empty"])], 5, lambda i: i["empty"]),
    ("truncated target", lambda i: ["-s", str(i["source"]), "-t", str(i["truncated"])], 6, lambda i: i["truncated"]),
    ("corrupt source", lambda i: ["-s", str(i["corrupt"]), "-t", str(i["target"])], 6, lambda i: i["corrupt"]),
    ("text target", lambda i: ["-s", str(i["source"]), "-t", str(i["text"])], 7, lambda i: i["text"]),
    ("no face in source", lambda i: ["-s", str(i["no_face"]), "-t", str(i["target"])], 8, lambda i: i["no_face"]),
    ("no face in target", lambda i: ["-s", str(i["source"]), "-t", str(i["no_face"])], 9, lambda i: i["no_face"]),
]


@pytest.mark.parametrize(("name", "make_args", "code", "named"), CASES, ids=[case[0] for case in CASES])
def test_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path, inputs: dict[str, Path], name: str,
                   make_args, code: int, named) -> None:  # type: ignore[no-untyped-def]
    before = {path: _digest(path) for path in inputs["folder"].iterdir()}
    output = tmp_path / "out" / "result.png"
    output.parent.mkdir()
    returned, err = _run(capsys, *make_args(inputs), "-o", str(output))
    assert returned == code and code in EXIT_CODES
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"slimfuse: {named(inputs)}: "), lines  # names the file first
    assert "Traceback" not in err
    assert list(output.parent.iterdir()) == []
    assert {path: _digest(path) for path in inputs["folder"].iterdir()} == before


def test_output_equal_to_an_input_is_refused(capsys: pytest.CaptureFixture[str], inputs: dict[str, Path]) -> None:
    before = _digest(inputs["target"])
    code, err = _run(capsys, "-s", str(inputs["source"]), "-t", str(inputs["target"]), "-o", str(inputs["target"]))
    assert code == 10 and str(inputs["target"]) in err
    assert _digest(inputs["target"]) == before


def test_missing_output_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                  inputs: dict[str, Path]) -> None:
    code, err = _run(capsys, "-s", str(inputs["source"]), "-t", str(inputs["target"]),
                     "-o", str(tmp_path / "nowhere" / "out.png"))
    assert code == 11 and "nowhere" in err and len(err.strip().splitlines()) == 1


def test_disk_full_leaves_no_output(capsys: pytest.CaptureFixture[str], tmp_path: Path, inputs: dict[str, Path],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: Image.Image, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Image.Image, "save", full)
    out = tmp_path / "out"
    out.mkdir()
    code, err = _run(capsys, "-s", str(inputs["source"]), "-t", str(inputs["target"]), "-o", str(out / "r.png"))
    assert code == 12 and "r.png" in err
    assert list(out.iterdir()) == []


def test_debug_adds_the_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                  inputs: dict[str, Path]) -> None:
    code, err = _run(capsys, "-s", str(inputs["empty"]), "-t", str(inputs["target"]), "-o",
                     str(tmp_path / "o.png"), "--debug")
    assert code == 5 and "Traceback" in err and err.strip().splitlines()[-1].startswith("slimfuse: ")


def test_success_prints_the_output_path(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        inputs: dict[str, Path]) -> None:
    output = tmp_path / "result.webp"
    code = main(["swap", "-s", str(inputs["source"]), "-t", str(inputs["target"]), "-o", str(output), "--quiet"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip() == str(output) and captured.err == ""
    assert Image.open(output).format == "WEBP"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_ctrl_c_while_the_output_is_written_leaves_nothing(tmp_path: Path, inputs: dict[str, Path]) -> None:
    """A real SIGINT to a real process while it writes a large output under its temporary name."""
    big = tmp_path / "big.png"
    Image.fromarray(np.tile(np.asarray(Image.open(inputs["target"]).convert("RGB")), (6, 8, 1))).save(big)
    output = tmp_path / "out.png"
    process = subprocess.Popen(
        [sys.executable, "-m", "slimfuse", "swap", "-s", str(inputs["source"]), "-t", str(big), "-o", str(output),
         "--face-selector-mode", "many"],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: any(tmp_path.glob(".out.png.*.part")), process, "temporary output")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert err.strip().splitlines() == ["slimfuse: interrupted; no output was written"]
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.png", "in"]  # the temporary file went too


def test_an_output_name_too_long_is_refused_before_any_work(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                            astronaut_path: Path, grace_hopper_path: Path) -> None:
    output = tmp_path / ("x" * 250 + ".png")
    code = main(["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(output)])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 13 and "the file name is too long" in line and line.startswith(f"slimfuse: {output}")
    assert list(tmp_path.iterdir()) == []


def test_an_output_that_is_a_folder_gets_the_target_under_its_name(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path, inputs: dict[str, Path]) -> None:
    folder = tmp_path / "some_dir"
    folder.mkdir()
    code, err = _run(capsys, "-s", str(inputs["source"]), "-t", str(inputs["target"]), "-o", str(folder))
    assert code == 0, err
    assert sorted(path.name for path in folder.iterdir()) == [".slimfuse-batch.jsonl", inputs["target"].name]


def test_an_image_swap_says_what_it_did_unless_quiet(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     inputs: dict[str, Path]) -> None:
    output = tmp_path / "out.jpg"
    assert main(["swap", "-s", str(inputs["source"]), "-t", str(inputs["target"]), "-o", str(output)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(output)  # stdout stays the output path
    assert captured.err.strip() == f"slimfuse: {inputs['target']}: 1 face found, 1 swapped"
    assert main(["swap", "-s", str(inputs["source"]), "-t", str(inputs["target"]), "-o", str(output), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_the_output_image_quality_sets_the_jpeg_quality(tmp_path: Path, inputs: dict[str, Path]) -> None:
    sizes = {}
    for quality in (30, 95):
        output = tmp_path / f"q{quality}.jpg"
        assert main(["swap", "--quiet", "-s", str(inputs["source"]), "-t", str(inputs["target"]), "-o", str(output),
                     "--output-image-quality", str(quality)]) == 0
        sizes[quality] = output.stat().st_size
        quantization = Image.open(output).quantization  # type: ignore[attr-defined]
        assert quantization[0][0] > 10 if quality == 30 else quantization[0][0] <= 3
    assert sizes[30] < sizes[95] / 2


def test_sources_of_different_people_are_warned_about(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                      inputs: dict[str, Path], grace_hopper_path: Path) -> None:
    """Each photo is compared with the others, not with their mean (which halves the distance)."""
    output = tmp_path / "out.png"
    code = main(["swap", "-s", str(inputs["source"]), str(grace_hopper_path), "-t", str(inputs["target"]), "-o",
                 str(output)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 0 and f"slimfuse: warning: {grace_hopper_path}: this face looks like a different person from " \
        f"{inputs['source']}" in lines

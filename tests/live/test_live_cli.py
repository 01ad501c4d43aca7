"""`slimfuse live` on the command line: every option documented in the README, and bad inputs as one line with
their exit code before any frame is read."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from slimfuse.cli.main import build_parser, main

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_live_option_is_documented() -> None:
    text = README.read_text()
    live = build_parser()._subparsers._group_actions[0].choices["live"]  # type: ignore[union-attr]
    for action in live._actions:
        long_names = [name for name in action.option_strings if name.startswith("--")]
        if long_names and "--help" not in long_names:
            assert any(name in text for name in long_names), long_names


def test_a_missing_input_file_is_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        astronaut_path: Path) -> None:
    assert main(["live", "-s", str(astronaut_path), "--input", str(tmp_path / "none.mp4")]) == 3
    assert capsys.readouterr().err.strip() == f"slimfuse: {tmp_path / 'none.mp4'}: file not found"


def test_a_bad_capture_size_is_a_usage_error(capsys: pytest.CaptureFixture[str], astronaut_path: Path) -> None:
    assert main(["live", "-s", str(astronaut_path), "--input-size", "640"]) == 2
    assert re.search(r"--input-size: not a size like 640x480: 640; see slimfuse live --help$",
                     capsys.readouterr().err.strip())


def test_a_missing_switch_source_is_exit_3_before_any_model(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             astronaut_path: Path) -> None:
    missing = tmp_path / "other.jpg"
    assert main(["live", "-s", str(astronaut_path), "--switch-source", str(missing), "--input", str(astronaut_path)]) == 3
    assert capsys.readouterr().err.strip() == f"slimfuse: {missing}: file not found"


def test_a_negative_reconnect_is_a_usage_error(capsys: pytest.CaptureFixture[str], astronaut_path: Path) -> None:
    assert main(["live", "-s", str(astronaut_path), "--reconnect", "-1"]) == 2
    assert re.search(r"--reconnect: must be 0 or more, got -1; see slimfuse live --help$", capsys.readouterr().err.strip())


def test_an_output_in_a_missing_folder_is_refused_before_the_session(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path: Path, astronaut_path: Path) -> None:
    output = tmp_path / "missing" / "live.mkv"
    assert main(["live", "-s", str(astronaut_path), "--input", str(astronaut_path), "--output", str(output)]) == 35
    assert capsys.readouterr().err.strip() == f"slimfuse: {output}: output directory {output.parent} does not exist"


def test_a_silent_stream_says_that_nothing_arrived() -> None:
    """A UDP address nothing is sent to: one plain line, not FFmpeg's interrupt ('Immediate exit requested')."""
    from streams import free_udp_port

    from slimfuse.live.inputs import InputOptions, LiveInput
    from slimfuse.live.slot import LatestSlot

    url = f"udp://127.0.0.1:{free_udp_port()}"
    silent = LiveInput(url, LatestSlot(), InputOptions(timeout=1.0, open_timeout=1.0)).start()
    assert silent.opened.wait(30)
    silent.stop()
    assert silent.error is not None and silent.frames == 0
    assert silent.error.message == (f"{url}: nothing arrived within 1 s (is the stream being sent, to this address "
                                    "and port?)")

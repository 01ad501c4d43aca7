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

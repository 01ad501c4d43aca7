"""The README documents every exit code and every option of `slimfuse swap`."""
from __future__ import annotations

import re
from pathlib import Path

from slimfuse.cli.main import build_parser
from slimfuse.errors import EXIT_CODES

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_exit_code_is_documented() -> None:
    text = README.read_text()
    documented = {int(code): meaning for code, meaning in re.findall(r"^\| (\d+) \| (.+?) \|$", text, re.M)}
    assert documented == EXIT_CODES


def test_every_swap_option_is_documented() -> None:
    text = README.read_text()
    parser = build_parser()
    swap = parser._subparsers._group_actions[0].choices["swap"]  # type: ignore[union-attr]
    for action in swap._actions:
        long_names = [name for name in action.option_strings if name.startswith("--")]
        if not long_names or "--help" in long_names:
            continue
        assert any(name in text for name in long_names), long_names

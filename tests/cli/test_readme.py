"""The README documents every exit code, every option of the option table with its default, and every option of
every command."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from slimfuse.cli.main import build_parser
from slimfuse.config import OPTIONS
from slimfuse.errors import EXIT_CODES
from slimfuse.options import Declared, Switch

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_exit_code_is_documented() -> None:
    text = README.read_text()
    documented = {int(code): meaning for code, meaning in re.findall(r"^\| (\d+) \| (.+?) \|$", text, re.M)}
    assert documented == EXIT_CODES


def _shown_default(entry: Declared) -> str | None:
    """How the README's table shows the option's default (None: in words of its own, as for a default of None)."""
    default = entry.default
    if isinstance(entry.option.kind, Switch):
        return "on" if default else "off"
    if default is None:
        return None
    return f"`{' '.join(map(str, default)) if isinstance(default, tuple) else default}`"


def test_every_option_of_the_table_is_documented_with_its_default() -> None:
    rows = [line.split(" | ") for line in README.read_text().splitlines() if line.startswith("| `--")]
    for entry in OPTIONS:
        if not entry.allows("swap") and not entry.allows("live"):
            continue
        flags = (entry.flag, *(f"--no-{entry.flag[2:]}" for _ in range(isinstance(entry.option.kind, Switch))))
        row = next((row for row in rows if any(re.search(re.escape(f"`{flag}") + r"[ `/\\]", row[0] + " ")
                                               for flag in flags)), None)
        assert row is not None, f"{entry.flag} is not in the README's option tables"
        shown = _shown_default(entry)
        if shown is not None and entry.option.alias_of is None:
            assert row[1].startswith(shown) or row[1] == shown, f"{entry.flag}: README says {row[1]!r}, not {shown}"


def test_every_option_of_every_command_is_documented() -> None:
    text = README.read_text()

    def undocumented(parser: argparse.ArgumentParser, command: str) -> list[str]:
        missing = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    missing += undocumented(sub, f"{command} {name}")
                continue
            flags = [flag for flag in action.option_strings if flag.startswith("--")]
            if flags and "--help" not in flags and action.help != argparse.SUPPRESS and \
                    not any(flag in text for flag in flags):
                missing.append(f"{command}: {' '.join(flags)}")
        return missing

    assert undocumented(build_parser(), "slimfuse") == []

"""The README's Python API examples run as they are written (in order, in a fresh folder)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_api_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text()
    start = text.index("## Python API")
    examples = re.findall(r"```python\n(.*?)```", text[start:text.index("\n## ", start + 1)], re.S)
    assert examples
    monkeypatch.chdir(tmp_path)
    for index, example in enumerate(examples):
        exec(compile(example, f"README.md API example {index}", "exec"), {})  # noqa: S102
    assert (tmp_path / "out" / "api.png").is_file()  # what the example writes
    assert capsys.readouterr().out.startswith("1 [")  # one face found in the target, and its box

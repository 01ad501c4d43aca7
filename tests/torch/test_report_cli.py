"""`slimfuse optimize ARCH --report`: one row per technique in the table and the JSON; option mistakes and a
missing torch are one line with their documented exit codes, and the core command line never imports torch."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slimfuse.cli.main import main
from slimfuse.errors import TorchMissingError, UsageError


@pytest.mark.slow
def test_codeformer_report_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "report.json"
    assert main(["optimize", "codeformer", "--report", "--width", "4", "--size", "128", "--runs", "2", "--json",
                 str(path), "--quiet"]) == 0
    rows = {row["technique"]: row for row in json.loads(path.read_text())}
    assert list(rows) == ["fp32", "autocast", "pruned", "segmented", "cached_attention"]
    for row in rows.values():
        assert row["architecture"] == "codeformer" and row["peak_mb"] > 0 and row["latency_ms"] > 0
    assert rows["fp32"]["psnr_db"] is None and rows["fp32"]["verdict"] == "-"
    assert rows["segmented"]["psnr_db"] == 100.0 and rows["segmented"]["verdict"] == "pass"
    assert rows["segmented"]["weight_mb"] < rows["fp32"]["weight_mb"] / 2
    assert rows["pruned"]["parameters"] < rows["fp32"]["parameters"] == rows["autocast"]["parameters"]
    assert "reused on 2 of 3 calls" in rows["cached_attention"]["notes"]
    table = capsys.readouterr().out
    assert table.startswith("`codeformer` (codeformer I/O), width 4, 128 px, cpu")
    assert all(f"| {name} |" in table for name in rows)


@pytest.mark.parametrize("options", [
    ["face_landmark", "--fp16", "--width", "4"],
    ["codeformer", "--report", "--gate"],
    ["codeformer", "--report", "--prune-ratio", "1.5"],
    ["codeformer", "--report", "--size", "100"],
    ["inswapper_128", "--report"],
])
def test_option_mistakes(options: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["optimize", *options]) == UsageError.exit_code
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)


def test_missing_torch_is_one_line_and_exit_21() -> None:
    result = _python("import sys; sys.modules['torch'] = None\n"
                     "from slimfuse.cli.main import main\n"
                     "sys.exit(main(['optimize', 'codeformer', '--report']))")
    assert result.returncode == TorchMissingError.exit_code == 21
    assert result.stderr.strip().splitlines() == [
        "slimfuse: the PyTorch extra is not installed (cannot import torch): pip install 'slimfuse[torch]'"]


def test_core_command_line_does_not_import_torch() -> None:
    result = _python("import sys\nfrom slimfuse.cli.main import build_parser\nbuild_parser()\n"
                     "import slimfuse.optimize.torch\nprint('torch' in sys.modules)")
    assert result.returncode == 0 and result.stdout.strip() == "False"

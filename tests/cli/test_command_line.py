"""The command line as a new user meets it: usage errors, the help, a closed pipe, the sample photos."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slimfuse.cli.main import main
from slimfuse.errors import EXIT_CODES, PIPE_CLOSED_EXIT, UsageError
from slimfuse.samples import SAMPLES, sample_path

USAGE_ERRORS = [
    (["swap", "-s", "a.jpg", "-t", "b.jpg", "-o", "c.jpg", "--target-face-size", "0"], "slimfuse swap",
     ["--target-face-size", "positive whole number", "got 0"]),
    (["swap", "-s", "a.jpg", "-t", "b.jpg", "-o", "c.jpg", "--face-detector-model", "bogus"], "slimfuse swap",
     ["--face-detector-model", "'bogus'", "'short', 'full', 'auto', 'scrfd_2.5g'"]),
    (["swap", "-s", "a.jpg", "-t", "b.jpg"], "slimfuse swap", ["required", "-o/--output"]),
    (["swap", "-s", "a.jpg", "-t", "b.jpg", "-o", "c.jpg", "--no-such-option"], "slimfuse swap",
     ["unrecognized arguments: --no-such-option"]),
    (["models", "check"], "slimfuse models", ["'check'", "'list', 'fetch', 'verify', 'path'"]),
    (["models", "verify", "--all"], "slimfuse models verify", ["unrecognized arguments: --all"]),
    (["bench", "memory", "--frames", "0"], "slimfuse bench memory", ["--frames", "at least 1, got 0"]),
    (["optimize"], "slimfuse optimize", ["required", "MODEL"]),
    (["doctor", "--execution-provider", "gpu"], "slimfuse doctor", ["--execution-provider", "'gpu'", "'cuda'"]),
    ([], "slimfuse", ["required", "COMMAND"]),
]


@pytest.mark.parametrize(("argv", "prog", "named"), USAGE_ERRORS, ids=[" ".join(a[:2]) + f" {i}"
                                                                         for i, (a, _, _) in enumerate(USAGE_ERRORS)])
def test_a_usage_error_is_one_line_naming_the_option_and_its_values(capsys: pytest.CaptureFixture[str],
                                                                    argv: list[str], prog: str,
                                                                    named: list[str]) -> None:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == UsageError.exit_code == 2 and EXIT_CODES[code] == "invalid command-line usage"
    (line,) = captured.err.splitlines()
    assert line.startswith("slimfuse: ") and line.endswith(f"; see {prog} --help"), line
    assert all(part in line for part in named), line
    assert captured.out == "" and "usage:" not in captured.err


def test_the_help_says_swap_does_images_and_videos(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    swap_line = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("swap "))
    assert stopped.value.code == 0 and "images and videos" in swap_line


@pytest.mark.parametrize("action", ["list", "verify"])
def test_a_closed_stdout_ends_quietly(action: str) -> None:
    """`slimfuse models verify | head -2`, with the reader gone before the first line: no error line, exit 141."""
    reading, writing = os.pipe()
    os.close(reading)
    try:
        result = subprocess.run([sys.executable, "-m", "slimfuse", "models", action], stdout=writing,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(writing)
    assert (result.returncode, result.stderr) == (PIPE_CLOSED_EXIT, "")
    assert PIPE_CLOSED_EXIT in EXIT_CODES


def run_samples(*names: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slimfuse.samples", *names], capture_output=True, text=True,
                          timeout=60)


def test_samples_without_a_name_lists_every_sample() -> None:
    result = run_samples()
    assert result.returncode == 0 and result.stderr == ""
    listed = dict(line.split("\t") for line in result.stdout.splitlines())
    assert listed == {name: str(sample_path(name)) for name in SAMPLES}
    assert all(Path(path).is_file() for path in listed.values())


def test_samples_with_names_prints_their_paths_and_refuses_an_unknown_one() -> None:
    named = run_samples("astronaut", "grace_hopper")
    assert named.returncode == 0 and named.stdout.splitlines() == [str(sample_path("astronaut")),
                                                                    str(sample_path("grace_hopper"))]
    unknown = run_samples("lena")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr == "slimfuse: unknown sample lena; known: grace_hopper, astronaut\n"

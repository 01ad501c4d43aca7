"""Measurements in a fresh process: the result comes back, and a process that dies says so instead of hanging."""
from __future__ import annotations

import multiprocessing
import os

import pytest

from slimfuse.bench.fresh_process import measure_in_fresh_process


def _answer(value: int, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    results.put({"value": value, "pid": os.getpid()})


def _die(code: int, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    os._exit(code)  # as a crash or the kernel's OOM killer would: nothing is put


def test_the_result_comes_from_another_process() -> None:
    data = measure_in_fresh_process(_answer, 7)
    assert data["value"] == 7 and data["pid"] != os.getpid()


def test_a_process_that_dies_without_a_result_raises_instead_of_hanging() -> None:
    with pytest.raises(RuntimeError, match="exit code 3"):
        measure_in_fresh_process(_die, 3)

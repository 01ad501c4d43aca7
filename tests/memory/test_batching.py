"""Adaptive batching: an injected allocation failure halves the batch and the output is identical to a run that did
not fail; at batch 1 a model on a GPU provider moves to the CPU; every step is reported."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import neural_models as nm
from processor_parts import make_swapper
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.memory.batching import AdaptiveBatcher, BatchStep
from slimfuse.memory.probe import MB, process_memory, reset_peak_rss
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import SourcePhoto

# What ONNX Runtime says when its arena cannot grow (memory/limit.py recognizes it).
ORT_OOM = "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Failed to allocate memory for requested buffer of size 1048576"


class FailingSession:
    """A session whose runs fail with an allocation error while `fails(batch)` says so; records every batch."""

    def __init__(self, session: Any, fails: Callable[[int], bool], calls: list[int]) -> None:
        self.session, self.fails, self.calls = session, fails, calls

    def get_inputs(self) -> Any:
        return self.session.get_inputs()

    def get_providers(self) -> Any:
        return self.session.get_providers()

    def run(self, names: Any, feeds: dict[str, np.ndarray], options: Any = None) -> Any:
        batch = len(next(iter(feeds.values())))
        self.calls.append(batch)
        if self.fails(batch):
            raise RuntimeError(ORT_OOM)
        return self.session.run(names, feeds, options)


def first_call_over(limit: int) -> Callable[[int], bool]:
    """Fail the first call with a batch larger than `limit` only."""
    failed: list[int] = []

    def fails(batch: int) -> bool:
        if batch > limit and not failed:
            failed.append(batch)
            return True
        return False

    return fails


@pytest.fixture()
def batch_pool(tmp_path: Path, store: Store) -> ModelPool:
    placed = nm.place_standins(tmp_path / "placed", free_batch=True)
    return ModelPool(nm.isolated_store(tmp_path / "home", store, placed))


def wrap(monkeypatch: pytest.MonkeyPatch, pool: ModelPool, model: str, fails: Callable[[int], bool]) -> list[int]:
    calls: list[int] = []
    real = pool.session

    def session(name: str) -> Any:
        value = real(name)
        return FailingSession(value, fails, calls) if name == model else value

    monkeypatch.setattr(pool, "session", session)
    return calls


def test_a_failed_batch_is_halved_and_the_same_items_retried(batch_pool: ModelPool, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    model = "gfpgan_1.4"
    items = np.random.default_rng(3).random((7, 3, 512, 512), dtype=np.float32)
    expected = AdaptiveBatcher(batch_pool).run(model, {"input": items})
    calls = wrap(monkeypatch, batch_pool, model, first_call_over(2))
    batcher = AdaptiveBatcher(batch_pool, {model: 8})
    assert np.array_equal(batcher.run(model, {"input": items}), expected)  # nothing dropped, duplicated or moved
    assert calls == [7, 3, 3, 1] and batcher.size(model) == 3
    assert batcher.steps() == [BatchStep(model, "halved", 7, 3, ORT_OOM)]
    assert batcher.to_dict()["steps"][0]["action"] == "halved" and "batches of 3" in caplog.text


def test_halving_goes_down_to_one_then_the_error_stands_on_the_cpu(batch_pool: ModelPool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    model = "gfpgan_1.4"
    calls = wrap(monkeypatch, batch_pool, model, lambda batch: True)
    batcher = AdaptiveBatcher(batch_pool, {model: 4})
    with pytest.raises(RuntimeError, match="Failed to allocate"):
        batcher.run(model, {"input": np.zeros((4, 3, 512, 512), np.float32)})
    assert [(step.batch_from, step.batch_to) for step in batcher.steps()] == [(4, 2), (2, 1)]
    assert calls == [4, 2, 1]  # each smaller batch was really run again, and nothing after the last failure


def test_other_errors_are_not_retried(batch_pool: ModelPool) -> None:
    model = "gfpgan_1.4"
    with pytest.raises(Exception, match="input"):
        AdaptiveBatcher(batch_pool).run(model, {"wrong_name": np.zeros((2, 3, 512, 512), np.float32)})


def test_at_batch_one_a_gpu_model_moves_to_the_cpu(batch_pool: ModelPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's session "runs on CUDA" and fails even alone: the pool releases it and loads it for the CPU."""
    model = "gfpgan_1.4"
    batch_pool.session(model)
    batch_pool.provider_report.record_use(model, ["CUDAExecutionProvider", "CPUExecutionProvider"])
    wrap(monkeypatch, batch_pool, model, lambda batch: model not in batch_pool.stats().moved_to_cpu)
    items = np.random.default_rng(5).random((2, 3, 512, 512), dtype=np.float32)
    batcher = AdaptiveBatcher(batch_pool, {model: 2})
    assert np.array_equal(batcher.run(model, {"input": items}), items)  # the stand-in gives back its input
    assert [step.action for step in batcher.steps()] == ["halved", "moved_to_cpu"]
    stats = batch_pool.stats()
    assert stats.moved_to_cpu == (model,) and model in stats.released and dict(stats.loads_by_model)[model] == 2
    assert batch_pool.provider_report.used[model] == ("cpu",)


def test_the_swapper_backs_off_with_identical_output(batch_pool: ModelPool, monkeypatch: pytest.MonkeyPatch,
                                                     grace_hopper: np.ndarray, astronaut: np.ndarray) -> None:
    """inswapper at pixel boost 512 runs 16 sub-images a face, in batches of 8: the first fails."""
    face = FaceAnalyser(batch_pool).faces(grace_hopper)[0]
    source = [SourcePhoto(astronaut, FaceAnalyser(batch_pool).faces(astronaut)[0])]

    def swap(batcher: AdaptiveBatcher) -> list[np.ndarray]:
        processor = make_swapper(batch_pool, "inswapper_128", 512, batcher=batcher)
        prepared = processor.prepare(source)
        return [result.image for result in processor.process([processor.crop(grace_hopper, face)], prepared)]

    expected = swap(AdaptiveBatcher(batch_pool))
    calls = wrap(monkeypatch, batch_pool, "inswapper_128", first_call_over(2))
    batcher = AdaptiveBatcher(batch_pool)
    results = swap(batcher)
    assert all(np.array_equal(a, b) for a, b in zip(results, expected, strict=True))
    assert calls == [8, 4, 4, 4, 4] and batcher.steps()[0].batch_to == 4


class AllocatingSession(FailingSession):
    """A session that touches `per_item` bytes per batch item while it runs, as a generator's activations do."""

    def __init__(self, session: Any, per_item: int, calls: list[int]) -> None:
        super().__init__(session, lambda batch: False, calls)
        self.per_item = per_item

    def run(self, names: Any, feeds: dict[str, np.ndarray], options: Any = None) -> Any:
        activations = np.ones(self.per_item * len(next(iter(feeds.values()))), np.uint8)
        result = super().run(names, feeds, options)
        del activations
        return result


@pytest.mark.skipif(not reset_peak_rss(), reason="needs a resettable peak RSS (Linux)")
def test_the_first_wide_batch_refines_the_batch_size_to_the_budget(batch_pool: ModelPool,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    model, per_item = "gfpgan_1.4", 40 * MB
    items = np.random.default_rng(7).random((8, 3, 512, 512), dtype=np.float32)
    calls: list[int] = []
    real = batch_pool.session
    monkeypatch.setattr(batch_pool, "session", lambda name: AllocatingSession(real(name), per_item, calls))
    batch_pool.session(model)
    reset_peak_rss()
    messages: list[str] = []
    within = process_memory().rss_bytes + 100 * MB  # room for about two items' activations
    batcher = AdaptiveBatcher(batch_pool, {model: 4}, notify=messages.append, refine_within=within)
    assert np.array_equal(batcher.run(model, {"input": items}), items)  # the stand-in gives back its input
    assert calls[0] == 4 and set(calls[1:]) == {2} and sum(calls) == 8 and batcher.size(model) == 2
    [step] = batcher.steps()
    assert (step.action, step.batch_from, step.batch_to) == ("refined", 4, 2) and "keep to the budget" in messages[0]
    batcher.run(model, {"input": items[:4]})  # measured once per model
    assert len(batcher.steps()) == 1


def test_without_a_budget_batches_are_not_measured(batch_pool: ModelPool) -> None:
    batcher = AdaptiveBatcher(batch_pool, {"gfpgan_1.4": 4})
    batcher.run("gfpgan_1.4", {"input": np.zeros((8, 3, 512, 512), np.float32)})
    assert batcher.steps() == [] and batcher.size("gfpgan_1.4") == 4

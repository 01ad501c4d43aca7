"""The model pool: loads once under concurrency, never exceeds its byte budget, releases, counts."""
from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

import neural_models as nm
from slimfuse.models.pool import ModelPool
from slimfuse.models.runtime import SessionSettings
from slimfuse.models.store import Store

ENHANCERS = ["gfpgan_1.2", "gfpgan_1.3", "gfpgan_1.4", "restoreformer_plus_plus", "gpen_bfr_512"]
MB = 1 << 20


@pytest.fixture
def placed(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """Five enhancer stand-ins of 1 to 5 MB, placed in a --models-dir."""
    folder = tmp_path / "placed"
    sizes = {}
    for index, name in enumerate(ENHANCERS):
        path = nm.save(nm.padded(nm.identity_enhancer(name), (index + 1) * MB), folder, name)
        sizes[name] = path.stat().st_size
    return folder, sizes


def _pool(tmp_path: Path, folder: Path, budget: int | None) -> tuple[ModelPool, list[str]]:
    store = Store(home=tmp_path / "home", models_dir=folder, notify=lambda message: None)
    loaded: list[str] = []
    pool = ModelPool(store, budget_bytes=budget)
    original = pool._load_session

    def counting(name: str, path: Path):  # type: ignore[no-untyped-def]
        loaded.append(name)
        return original(name, path)

    pool._load_session = counting  # type: ignore[method-assign]
    return pool, loaded


def _hammer(pool: ModelPool, sequences: list[list[str]]) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(sequences))

    def work(names: list[str]) -> None:
        try:
            barrier.wait()
            for name in names:
                pool.session(name)
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised by the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(names,)) for names in sequences]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_eight_threads_load_each_model_exactly_once(tmp_path: Path, placed: tuple[Path, dict[str, int]]) -> None:
    folder, sizes = placed
    pool, loaded = _pool(tmp_path, folder, budget=sum(sizes.values()))
    rng = random.Random(0)
    sequences = [rng.sample(ENHANCERS, len(ENHANCERS)) for _ in range(8)]
    assert _hammer(pool, sequences) == []
    assert sorted(loaded) == sorted(ENHANCERS)  # each model loaded once, whoever asked first
    stats = pool.stats()
    assert stats.loads == len(ENHANCERS) and stats.evictions == 0
    assert dict(stats.loads_by_model) == dict.fromkeys(ENHANCERS, 1)
    assert stats.resident_bytes == sum(sizes.values()) <= stats.budget_bytes  # type: ignore[operator]


def test_eight_threads_never_exceed_the_budget(tmp_path: Path, placed: tuple[Path, dict[str, int]]) -> None:
    folder, sizes = placed
    budget = sizes["restoreformer_plus_plus"] + sizes["gpen_bfr_512"]  # the two largest fit, not three
    pool, loaded = _pool(tmp_path, folder, budget)
    held: list[int] = []
    original = pool._reserve

    def watching(key: str, size: int) -> None:
        original(key, size)
        held.append(pool._held())  # entries plus every load in flight, right after this reservation

    pool._reserve = watching  # type: ignore[method-assign]
    rng = random.Random(1)
    sequences = [[rng.choice(ENHANCERS) for _ in range(12)] for _ in range(8)]
    assert _hammer(pool, sequences) == []
    stats = pool.stats()
    assert stats.peak_bytes <= budget and max(held) <= budget
    assert stats.evictions > 0 and stats.loads == len(loaded) == stats.evictions + len(stats.resident)
    assert stats.resident_bytes <= budget


def test_release_and_counts(tmp_path: Path, placed: tuple[Path, dict[str, int]]) -> None:
    folder, sizes = placed
    pool, loaded = _pool(tmp_path, folder, budget=None)
    first = pool.session("gfpgan_1.4")
    assert pool.session("gfpgan_1.4") is first
    assert pool.release("gfpgan_1.4") and not pool.release("gfpgan_1.4")
    assert pool.stats().resident_bytes == 0
    assert pool.session("gfpgan_1.4") is not first  # loaded again after a release
    pool.session("gfpgan_1.2")
    pool.release_all()
    stats = pool.stats()
    assert (stats.loads, stats.releases, stats.resident, stats.resident_bytes) == (3, 3, (), 0)
    assert dict(stats.loads_by_model) == {"gfpgan_1.4": 2, "gfpgan_1.2": 1}


def test_a_model_larger_than_the_budget_is_loaded_alone_with_a_warning(
        tmp_path: Path, placed: tuple[Path, dict[str, int]], caplog: pytest.LogCaptureFixture) -> None:
    folder, sizes = placed
    store = Store(home=tmp_path / "home", models_dir=folder)
    pool = ModelPool(store, budget_bytes=sizes["gfpgan_1.3"])
    pool.session("gfpgan_1.2")
    pool.session("gpen_bfr_512")
    assert pool.stats().resident == ("gpen_bfr_512",)
    assert [record.levelname for record in caplog.records if "larger than the model memory budget"
            in record.getMessage()] == ["WARNING"]


def test_a_model_given_its_own_threads_gets_them_and_the_others_keep_the_runtime_s(
        tmp_path: Path, placed: tuple[Path, dict[str, int]]) -> None:
    folder, _ = placed
    store = Store(home=tmp_path / "home", models_dir=folder, notify=lambda message: None)
    pool = ModelPool(store, SessionSettings(intra_op_threads=1), threads={"gfpgan_1.4": 2})
    assert pool.session("gfpgan_1.4").get_session_options().intra_op_num_threads == 2
    assert pool.session("gfpgan_1.3").get_session_options().intra_op_num_threads == 1

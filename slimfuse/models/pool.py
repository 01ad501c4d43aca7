"""ModelPool: the only owner of loaded models (ONNX Runtime sessions, dlib objects, constants read from models).

Loads each model once, on first use, even with many threads asking; keeps what it holds under a byte budget by
evicting the least recently used before a load (the bytes of loads in flight are reserved, so concurrent loads
cannot overshoot together); can release a model; counts loads, evictions, releases and resident bytes, and keeps
the run's ProviderReport (which execution providers were asked for and which were actually used).

A model's resident bytes are its file size (a fair proxy for an ONNX Runtime session's weights). A single model
larger than the whole budget is loaded alone, with a warning.

`variants` maps catalog names to the stored variant (NAME.VARIANT, see slimfuse.models.variants) that `session`
loads in their place: the `--face-*-model NAME.VARIANT` options and the memory levels choose them, the store
verifies them (sha256, origin, gate verdict) before their first load, and the callers keep asking by catalog name.
"""
from __future__ import annotations

import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar


from slimfuse.errors import ModelInvalidError
from slimfuse.models.bound_session import BoundSession, Session
from slimfuse.models.prepared import FOLDER, PreparedModels
from slimfuse.models.runtime import ModelLoadError, ProviderReport, SessionSettings, check_requested, create_session
from slimfuse.models.store import Notify, Store
from slimfuse.models.validate import bind_inputs, describe, input_mismatch, session_inputs

LOG = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class PoolStats:
    loads: int
    evictions: int
    resident_bytes: int
    resident: tuple[str, ...]
    releases: int = 0
    peak_bytes: int = 0
    """The most bytes held and reserved for loads in flight at any one time."""
    budget_bytes: int | None = None
    loads_by_model: tuple[tuple[str, int], ...] = ()
    released: tuple[str, ...] = ()
    """What was released, in order (a stage that no longer needs it, or a move to the CPU)."""
    moved_to_cpu: tuple[str, ...] = ()
    """Models whose sessions now run on the CPU after running out of device memory."""


@dataclass
class _Entry:
    value: Any
    nbytes: int


class ModelPool:
    def __init__(self, store: Store, runtime: SessionSettings = SessionSettings(), budget_bytes: int | None = None,
                 notify: Notify | None = None, variants: Mapping[str, str] | None = None,
                 cpu_only: Iterable[str] = (), threads: Mapping[str, int] | None = None) -> None:
        """cpu_only: catalog models whose sessions run on the CPU whatever the providers (a memory level's);
        threads: catalog models whose sessions take this many intra-op threads instead of the runtime's."""
        self.store = store
        self.variants: dict[str, str] = dict(variants or {})
        """Catalog name -> the variant (NAME.VARIANT) loaded in its place."""
        self.runtime = runtime
        self.budget_bytes = budget_bytes
        self.notify: Notify = notify if notify is not None else store.notify
        self.provider_report = ProviderReport(runtime.providers)
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._cond = threading.Condition()
        self._loading: dict[str, threading.Lock] = {}
        self._reserved: dict[str, int] = {}
        self._loads: Counter[str] = Counter()
        self._evictions = 0
        self._releases = 0
        self._released: list[str] = []
        self._cpu_planned = frozenset(self.variants.get(name, name) for name in cpu_only)
        self._cpu_only: set[str] = set(self._cpu_planned)
        self._threads: dict[str, int] = dict(threads or {})
        self._peak = 0
        self._prepared = PreparedModels(store.home / FOLDER, self.notify)
        # Missing providers are reported (or refused, with --strict-provider) before anything is loaded or written.
        check_requested(runtime, self.provider_report, LOG.warning)

    def session(self, name: str) -> Session:
        """The ONNX Runtime session of catalog model `name` (or of the variant chosen for it), checked against its
        catalog entry on load; fed under the catalog's input names even where the file names its one input
        otherwise."""
        chosen = self.variants.get(name, name)
        return self.get(chosen, lambda path: self._load_session(chosen, path))

    def on_gpu(self, name: str) -> bool:
        """Whether model `name`'s session runs on a provider other than the CPU."""
        used = self.provider_report.used.get(self.variants.get(name, name), ())
        return any(provider != "cpu" for provider in used)

    def move_to_cpu(self, name: str) -> None:
        """Release model `name`; its next session is made for the CPU alone (it ran out of device memory)."""
        with self._cond:
            self._cpu_only.add(self.variants.get(name, name))
        self.release(name)

    def get(self, name: str, load: Callable[[Path], T], key: str | None = None, nbytes: int | None = None) -> T:
        """The loaded model `name`, loading it with `load(verified_path)` if it is not resident.

        key: what the loaded value is held under (default `name`), for several things read from one model file;
        nbytes: its resident bytes when they are not the file's size."""
        key = key or name
        with self._cond:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                return entry.value
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:  # one loader per key; the others wait and then find it resident
            with self._cond:
                entry = self._entries.get(key)
                if entry is not None:
                    self._entries.move_to_end(key)
                    return entry.value
            path = self.store.path(name)
            size = path.stat().st_size if nbytes is None else int(nbytes)
            self._reserve(key, size)
            try:
                value = load(path)
            except BaseException:
                with self._cond:
                    self._reserved.pop(key, None)
                    self._cond.notify_all()
                raise
            with self._cond:
                self._reserved.pop(key, None)
                self._entries[key] = _Entry(value=value, nbytes=size)
                self._loads[key] += 1
                self._peak = max(self._peak, self._held())
                self._cond.notify_all()
            return value

    def release(self, name: str) -> bool:
        """Drop model `name` (and anything held under keys read from it); True if something was held."""
        names = {name, self.variants.get(name, name)}
        with self._cond:
            keys = [key for key in self._entries if key.partition("#")[0] in names]
            for key in keys:
                del self._entries[key]
            self._releases += len(keys)
            self._released += keys
            self._cond.notify_all()
            return bool(keys)

    def release_all(self) -> None:
        with self._cond:
            self._releases += len(self._entries)
            self._released += list(self._entries)
            self._entries.clear()
            self._cond.notify_all()

    def stats(self) -> PoolStats:
        with self._cond:
            return PoolStats(
                loads=sum(self._loads.values()),
                evictions=self._evictions,
                resident_bytes=sum(entry.nbytes for entry in self._entries.values()),
                resident=tuple(self._entries),
                releases=self._releases,
                peak_bytes=self._peak,
                budget_bytes=self.budget_bytes,
                loads_by_model=tuple(sorted(self._loads.items())),
                released=tuple(self._released),
                moved_to_cpu=tuple(sorted(self._cpu_only - self._cpu_planned)),
            )

    def _load_session(self, name: str, path: Path) -> Session:
        base, variant = self.store.catalog.split(name)
        spec = self.store.catalog.get(base)
        with self._cond:
            runtime = replace(self.runtime, providers=("cpu",)) if name in self._cpu_only else self.runtime
        if base in self._threads:
            runtime = replace(runtime, intra_op_threads=self._threads[base])
        loaded, runtime = self._prepared.session_input(name, path, runtime)
        try:
            session = create_session(loaded, runtime, self.provider_report, LOG.warning, name)
        except ModelLoadError as exc:
            expected = f"an ONNX model with inputs {describe(spec.io.inputs)}" if spec.io else "an ONNX model"
            problem = (f"expected {expected}, found a file ONNX Runtime cannot load "
                       f"({path.stat().st_size} bytes; {exc.reason})")
            if spec.sha256 is not None or variant is not None:  # a verified file: the runtime is at fault
                raise ModelInvalidError(path, f"model {name}: {problem}") from exc
            self.store.reject(name, path, problem)
        if spec.io is None:
            return session
        found = session_inputs(session)
        binding = bind_inputs(spec.io.inputs, found)
        if binding is None:
            problem = input_mismatch(spec.io.inputs, found)
            del session
            self.store.reject(name, path, problem or "inputs differ")
        if any(ours != theirs for ours, theirs in binding.items()):
            return BoundSession(session, binding)
        return session

    def _held(self) -> int:
        return sum(entry.nbytes for entry in self._entries.values()) + sum(self._reserved.values())

    def _reserve(self, key: str, size: int) -> None:
        """Make room for `size` more bytes (evicting the least recently used), waiting for loads in flight when
        they hold the room; then reserve it for `key`. Called without the condition held."""
        budget = self.budget_bytes
        with self._cond:
            while budget is not None:
                while self._entries and self._held() + size > budget:
                    self._entries.popitem(last=False)
                    self._evictions += 1
                if self._held() + size <= budget:
                    break
                if not self._reserved:  # nothing else held or loading: the model alone is over the budget
                    LOG.warning(f"{key} ({size / 1e6:.0f} MB) is larger than the model memory "
                                f"budget ({budget / 1e6:.0f} MB); it is loaded alone")
                    break
                self._cond.wait()
            self._reserved[key] = size
            self._peak = max(self._peak, self._held())

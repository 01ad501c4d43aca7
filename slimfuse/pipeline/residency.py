"""Which models stay loaded, as the run's memory level decides: the one object the pipeline asks at each step, so
the loops themselves hold no memory policy."""
from __future__ import annotations

from collections.abc import Iterable

from slimfuse.memory.levels import MemoryLevel
from slimfuse.models.pool import ModelPool


class Residency:
    def __init__(self, pool: ModelPool, level: MemoryLevel, generators: Iterable[str] = ()) -> None:
        """generators: the run's generator models; one alone is never released between chunks (nothing waits
        for its room, and reloading it would cost a load and its peak every chunk)."""
        self.pool = pool
        self.level = level
        self.take_turns = level.one_generator and len(set(generators)) > 1

    def after_stage(self, generators: Iterable[str]) -> None:
        """A stage has run over what there is to do now: at a level that keeps one generator resident at a time,
        its generators go, so the next stage's can load."""
        if self.take_turns:
            for name in generators:
                self.pool.release(name)

    def after_sources(self, preparation_models: Iterable[str], identity_models: Iterable[str],
                      keep_identity: bool) -> None:
        """The sources are prepared: what only their preparation used goes (the identity model too, unless
        reference selection or a tracker that settles crossing faces still needs it)."""
        if self.level.keep_resident:
            return
        identity = tuple(identity_models)
        for name in dict.fromkeys([*preparation_models, *identity]):
            if not (keep_identity and name in identity):
                self.pool.release(name)

    def after_run(self) -> None:
        """A video or stream has ended: every model and arena goes (the encoder's flush gets the memory)."""
        self.pool.release_all()

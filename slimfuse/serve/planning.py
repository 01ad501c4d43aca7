"""A job's options as a client may give them (the option table's `client` audience: never the server's files, its
hardware or the synthetic label), and its plan at submission: refused at once when it can never fit the server's
--memory-budget (MemoryBudgetError, exit 41, with the smallest budget that works) or when it needs model variants
that are not made yet (the server makes none itself: VariantsNotReadyError, exit 24, naming the commands), that
needs a model the server does not hold (ModelUnavailableError, exit 14: it never downloads one for a client), or that
runs the lip syncer without a sound (LipSyncAudioError, exit 36, as on the command line)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from slimfuse.config import OPTIONS, RunConfig
from slimfuse.errors import ModelUnavailableError, UsageError, VariantsNotReadyError
from slimfuse.models.store import Store, default_home
from slimfuse.options import for_audience
from slimfuse.pipeline.run import plan_for
from slimfuse.processors.lip_sync import require_sound

CLIENT_OPTIONS = frozenset(entry.name for entry in for_audience(OPTIONS, "client"))
"""What a client may set: the allowlist, from the option table."""


def client_options(options: Mapping[str, object]) -> dict[str, object]:
    """The options of a request, checked by name (UsageError for any other)."""
    refused = sorted(set(options) - CLIENT_OPTIONS)
    if refused:
        raise UsageError(detail=f"option{'s' if len(refused) > 1 else ''} not accepted by the server: "
                                f"{', '.join(refused)}")
    return {name: value for name, value in options.items() if value is not None}


def job_options(options: Mapping[str, object], budget_mb: float | None) -> dict[str, object]:
    """The options a job runs with: the client's, under the server's budget (a smaller budget of its own stays)."""
    chosen = client_options(options)
    own = chosen.get("memory_budget")
    if budget_mb is not None:
        if not isinstance(own, int | float) or isinstance(own, bool) or own > budget_mb:
            chosen["memory_budget"] = budget_mb
    return chosen


def _held(store: Store, name: str) -> bool:
    """Whether the server holds model `name`, or can fetch it from a package index as every install does (the
    embedded models); a model users bring is never fetched for a client's job."""
    spec = store.catalog.get(name)
    placed = store.models_dir is not None and (store.models_dir / spec.filename).is_file()
    return spec.archive is not None or store.location(name).is_file() or placed


def plan_job(sources: Sequence[Path], target: Path, options: Mapping[str, object],
             models_dir: Path | None = None, sound: Path | None = None) -> tuple[RunConfig, int]:
    """The job's config and planned peak (bytes); `sound` (a sound file or a video) is the lip syncer's, the
    config's last source. Raises UsageError for bad options or a sound without the lip syncer, LipSyncAudioError for
    the lip syncer without a sound, MemoryBudgetError when the job cannot fit its budget, ModelUnavailableError when
    a model it needs is not installed and VariantsNotReadyError when its variants are not made. Reads model files'
    sizes and variants' records only: nothing is loaded or made."""
    config = RunConfig.from_options([*sources, *([sound] if sound is not None else [])], **options,
                                    models_dir=models_dir)
    config.check_sources()
    if "lip_syncer" in config.stages:
        require_sound(config.sound)
    elif sound is not None:
        raise UsageError(detail="audio: only the lip syncer follows a sound (--processors ... lip_syncer)")
    store = Store(home=default_home(), models_dir=models_dir, notify=lambda message: None)
    plan = plan_for(config, target, store)
    missing = [name for name in plan.models if not _held(store, name)]
    if missing:
        raise ModelUnavailableError(detail=f"{', '.join(missing)}: not installed on this server (its operator places "
                                           f"the file{'s' * (len(missing) > 1)} in its --models-dir)")
    work = plan.variant_work
    if work.pending:
        raise VariantsNotReadyError(detail=f"this job's options need model variants that are not made yet; the "
                                           f"server's operator makes them with: {'; '.join(work.commands())}")
    return config, plan.memory.estimated_peak_bytes

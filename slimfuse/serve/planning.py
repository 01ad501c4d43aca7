"""A job's options as a client may give them, and its memory plan at submission: refused at once when it can never
fit the server's --memory-budget (MemoryBudgetError, exit 41, with the smallest budget that works)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from slimfuse.config import OPTION_SECTIONS, RunConfig
from slimfuse.errors import UsageError
from slimfuse.models.store import Store, default_home
from slimfuse.pipeline.run import plan_for

# Options that name files or folders of the server, choose its hardware, or drop the synthetic label: the server
# sets these, clients never do.
SERVER_OPTIONS = frozenset({
    "reference_face_image", "models_dir", "temp_path", "keep_temp", "temp_frame_format", "c2pa_key",
    "c2pa_certificates", "provenance", "system_memory_limit", "model_variants", "execution_providers",
    "execution_device_id", "execution_thread_count", "strict_provider", "execution_gpu_memory_limit",
    "execution_arena_extend_strategy", "execution_cudnn_conv_algo_search", "execution_tensorrt_fp16",
    "execution_tensorrt_cache_dir",
})
CLIENT_OPTIONS = frozenset(OPTION_SECTIONS) - SERVER_OPTIONS | {"video_memory_strategy"}


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
        if not isinstance(own, int | float) or own > budget_mb:
            chosen["memory_budget"] = budget_mb
    return chosen


def plan_job(sources: Sequence[Path], target: Path, options: Mapping[str, object],
             models_dir: Path | None = None) -> tuple[RunConfig, int]:
    """The job's config and planned peak (bytes); raises UsageError for bad options and MemoryBudgetError when
    the job cannot fit its budget. Reads model files' sizes only: no model is loaded."""
    config = RunConfig.from_options(sources, **options, models_dir=models_dir)
    store = Store(home=default_home(), models_dir=models_dir, notify=lambda message: None)
    return config, plan_for(config, target, store).memory.estimated_peak_bytes

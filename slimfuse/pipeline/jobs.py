"""One swap job, a target to an output, as the command line runs it: the run planned (and, where the command asked
for it, the variants its memory level wants made first), built, the image or video swapped, and the run report
written (on error too). Its caller has checked the output where the job entered (media.destination.check_output)."""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from slimfuse.config import RunConfig
from slimfuse.media.destination import is_video
from slimfuse.memory.limit import system_memory_limit
from slimfuse.models.store import Notify, Store
from slimfuse.pipeline.frames import FrameStats
from slimfuse.pipeline.image import swap_image_file
from slimfuse.pipeline.plan import RunPlan
from slimfuse.pipeline.report import RunParts, RunReport
from slimfuse.pipeline.run import build_run, default_store, plan_for
from slimfuse.pipeline.video import Progress, VideoSwapJob

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobResult:
    output: Path
    stats: FrameStats
    frames_written: int | None = None
    """Video jobs: the frames in the output."""
    setup_seconds: float | None = None
    report_error: OSError | None = None
    """The run report could not be written (the swap itself succeeded)."""

    def summary(self) -> dict[str, object]:
        """What was done, for the command line's summary line and the run report."""
        stats = asdict(self.stats)
        found = stats.pop("faces_found")
        summary: dict[str, object] = {"faces_found": found, **stats}
        if self.frames_written is not None:
            summary["frames_written"] = self.frames_written
        if self.setup_seconds is not None:
            summary["setup_seconds"] = round(self.setup_seconds, 4)
        return summary


def swap_job(config: RunConfig, target: Path, output: Path, report: Path | None = None,
             progress: Progress | None = None, notify: Notify | None = None,
             make_variants: bool = False) -> JobResult:
    """Swap `target` into `output` (an image or a video, by the target's type) under the config's
    --system-memory-limit; `report`: write a run report there (on error too); `make_variants`: first make and
    gate the variants the plan finds missing (what `slimfuse swap` does, saying so), else run the originals."""
    run_report = None if report is None else RunReport(report, config, target)
    parts = RunParts()
    try:
        with system_memory_limit(config.memory.system_limit_bytes):
            store = default_store(config, notify)
            plan = plan_for(config, target, store)
            if make_variants and plan.variant_work.pending:
                plan = _with_variants_made(config, target, store, plan)
            parts = RunParts(plan)
            run = build_run(config, target, run_report, store=store, plan=plan)
            parts = RunParts(plan, run.pool, run.batcher)
            if is_video(target):
                video = VideoSwapJob(run, target, output, progress).run_job()
                result = JobResult(video.output, video.stats, video.frames_written, video.setup_seconds)
            else:
                image = swap_image_file(run, target, output)
                result = JobResult(image.output, image.stats)
    except BaseException as error:
        if run_report is not None:
            try:
                run_report.write(parts, error=error)
            except OSError as exc:  # the run's own error is the one to report
                LOG.warning(f"{report}: cannot write the run report ({exc})")
        raise
    if run_report is not None:
        try:
            run_report.write(parts, output, results=result.summary())
        except OSError as exc:
            return JobResult(result.output, result.stats, result.frames_written, result.setup_seconds, exc)
    return result


def _with_variants_made(config: RunConfig, target: Path, store: Store, plan: RunPlan) -> RunPlan:
    """Make and gate what `plan` found missing (each in a child process, a line before and after), and plan again
    with the variants that passed."""
    from slimfuse.optimize.on_demand import gate_variants, make_variants

    work = plan.variant_work
    make_variants(store, work.to_make, work.techniques, store.notify)
    gate_variants(store, work.to_gate, store.notify)
    return plan_for(config, target, store)

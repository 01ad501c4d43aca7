"""One swap job, a target to an output, as the command line, the server and the batch runner run it: the output
checked before any work, the run built, the image or video swapped, and the run report written (on error too)."""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from slimfuse.atomic import check_destination
from slimfuse.config import RunConfig, is_video
from slimfuse.errors import OutputUnwritableError, UsageError
from slimfuse.media.image_io import check_output_path
from slimfuse.media.video_encoding import CONTAINERS
from slimfuse.memory.limit import system_memory_limit
from slimfuse.models.store import Notify
from slimfuse.pipeline.frames import FrameStats
from slimfuse.pipeline.image import swap_image_file
from slimfuse.pipeline.report import RunReport
from slimfuse.pipeline.run import build_run
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


def check_output(output: Path, target: Path) -> None:
    """Every condition on the output that can be checked before any work: its type matches the target's, it is
    not a folder, its folder exists and is writable, and its name fits the file system."""
    if output.is_dir():
        raise OutputUnwritableError(output, "the output is a folder; give a file name")
    if not is_video(target):
        check_output_path(output)
        return
    if not is_video(output):
        raise UsageError(output, f"a video target needs a video output ({', '.join(CONTAINERS)})")
    check_destination(output)


def swap_job(config: RunConfig, target: Path, output: Path, report: Path | None = None,
             progress: Progress | None = None, notify: Notify | None = None) -> JobResult:
    """Swap `target` into `output` (an image or a video, by the target's type) under the config's
    --system-memory-limit; `report`: write a run report there (on error too)."""
    check_output(output, target)
    run_report = None if report is None else RunReport(report, config, target)
    try:
        with system_memory_limit(config.memory.system_limit_bytes):
            run = build_run(config, target, run_report, notify)
            if is_video(target):
                video = VideoSwapJob(run, target, output, progress).run_job()
                result = JobResult(video.output, video.stats, video.frames_written, video.setup_seconds)
            else:
                image = swap_image_file(run, target, output)
                result = JobResult(image.output, image.stats)
    except BaseException as error:
        if run_report is not None:
            try:
                run_report.write(error=error)
            except OSError as exc:  # the run's own error is the one to report
                LOG.warning(f"{report}: cannot write the run report ({exc})")
        raise
    if run_report is not None:
        try:
            run_report.write(output, results=result.summary())
        except OSError as exc:
            return JobResult(result.output, result.stats, result.frames_written, result.setup_seconds, exc)
    return result

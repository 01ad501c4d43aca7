"""Swap faces through a whole video.

Streaming (the default): a decoder thread and an encoder thread around the frame loop, joined by bounded queues,
so memory stays flat however long the video is and nothing touches the disk but the output. Disk mode
(`--temp-frame-format`): frames go to a temporary directory first, for machines short of memory; it is removed
on success, error and Ctrl-C unless `--keep-temp`.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from slimfuse.errors import UsageError, VideoDecodeStoppedError
from slimfuse.media.temp_frames import TempFrames
from slimfuse.media.video_probe import VideoInfo, probe
from slimfuse.media.video_reader import FrameSpan, VideoFrame, VideoReader, read_frame
from slimfuse.media.video_writer import VideoWriter
from slimfuse.pipeline.chain import FrameWork, Target
from slimfuse.pipeline.frames import FrameLoop, FrameStats
from slimfuse.pipeline.run import Run
from slimfuse.processors.lip_sync import check_lip_sync_targets


class Progress(Protocol):
    """Where a video job reports its frames (the command line draws a bar; the server records them)."""

    total: int | None
    done: int

    def advance(self, frames: int = 1) -> None: ...


@dataclass
class CountingProgress:
    """Progress that only counts (no bar, no output)."""

    total: int | None = None
    done: int = 0

    def advance(self, frames: int = 1) -> None:
        self.done += frames


@dataclass(frozen=True)
class VideoResult:
    output: Path
    info: VideoInfo
    frames_written: int
    stats: FrameStats
    setup_seconds: float
    """Model loading and source preparation, before the first frame."""


def _seconds_to(info: VideoInfo, end: int | None) -> float | None:
    """How far into the video its frames go: its duration, or where --trim-frame-end stops it."""
    if end is None:
        return info.duration
    stop = float(end / info.fps)
    return stop if info.duration is None else min(stop, info.duration)


def _render(frames: FrameLoop, frame: VideoFrame, targets: Future[list[Target]]) -> np.ndarray:
    # the decoded frame is the job's own
    return frames.render(frame.rgb, targets.result(), overwrite=True, time=frame.time)


@contextmanager
def opencv_threads(count: int) -> Iterator[None]:
    """OpenCV's own thread pool at `count` threads inside the block, as it was after. When frames are rendered in
    parallel, splitting each small per-face operation over the cores as well only adds hand-offs between threads
    that already keep the cores busy (measured in the README, "Videos"). The setting is the process's: two such
    blocks overlapping in one process may restore it in the wrong order, which changes speed only."""
    before = cv2.getNumThreads()
    cv2.setNumThreads(count)
    try:
        yield
    finally:
        cv2.setNumThreads(before)


def partial_path(output: Path) -> Path:
    """Where the frames before a decoding error are kept: beside the output, never under its name."""
    return output.with_name(f"{output.stem}.partial{output.suffix}")


class VideoSwapJob:
    def __init__(self, run: Run, target: Path, output: Path, progress: Progress | None = None,
                 span: FrameSpan | None = None) -> None:
        """The run's plan sets the frames each queue (and chunk) holds, the frames rendered at once and the
        codecs' threads. span: swap only this keyframe segment into `output`, video only and unlabelled (the
        segments' join adds the audio and the label; see slimfuse.batch.segments)."""
        self.run = run
        self.target = target
        self.output = output
        memory = run.plan.memory
        self.level = run.config.memory.level
        self.queue_frames = max(1, memory.queue_frames)
        self.render_workers = memory.render_workers
        self.codec_threads = memory.codec_threads
        self.span = span
        self.encode = run.config.encode_settings(memory.codec_threads)
        if span is not None:
            self.encode = replace(self.encode, skip_audio=True)
        self.progress: Progress = progress if progress is not None else CountingProgress()

    def run_job(self) -> VideoResult:
        started = time.perf_counter()
        run, config = self.run, self.run.config
        info = probe(self.target)
        scale = run.chain.frame_scale  # frames come out of a frame enhancer that keeps its scale this much larger
        written = info if scale == 1 else replace(info, width=info.width * scale, height=info.height * scale)
        start, end = config.video.trim_frame_start, config.video.trim_frame_end
        check_lip_sync_targets(run.chain.processors, self.target, True, _seconds_to(info, end))
        prepared = run.prepare(keep_identity=True)  # the tracker settles crossing faces by identity
        frames = run.loop(prepared, *self._reference_frame(info))
        run.mark("sources")
        estimated = info.estimated_frames
        if self.progress.total is None and estimated is not None:
            self.progress.total = max(0, (min(end, estimated) if end is not None else estimated) - start)
        writer = VideoWriter(self.output, written, self.encode, trim_start=start, trim_end=end,
                             queue_size=self.queue_frames, notify=run.notify,
                             provenance=run.provenance if self.span is None else None)
        setup_seconds = time.perf_counter() - started
        temp = config.video.temp_frame_format
        with writer:
            with VideoReader(self.target, start=start, end=end, queue_size=self.queue_frames, info=info,
                             threads=self.codec_threads, span=self.span) as decoded:
                reader = self._after_warmup(decoded, frames)
                try:
                    if temp is None and self.level.chunked:
                        self._in_chunks(reader, frames, writer)
                    elif temp is None:
                        self._stream(reader, frames, writer)
                    else:
                        self._through_disk(reader, frames, writer, temp)
                except VideoDecodeStoppedError as error:
                    self._keep_partial(writer, error)
                    raise
            run.mark("processing")
            stats = frames.stats()
            del frames  # it holds sessions too; the encoder's flush gets the memory back
            run.residency.after_run()
        run.mark("write")
        return VideoResult(self.output, info, writer.frames_written, stats, setup_seconds)

    def _reference_frame(self, info: VideoInfo) -> tuple[np.ndarray, Path] | tuple[()]:
        """The frame --reference-frame-number takes the reference face from, and how an error names it; nothing
        when the run selects otherwise (a reference photo, another mode, the first frame with faces)."""
        faces = self.run.config.faces
        number = faces.reference_frame_number
        if faces.face_selector_mode != "reference" or faces.reference_face_image is not None or number is None:
            return ()
        frames = info.estimated_frames
        if frames is not None and number >= frames:
            raise UsageError(detail=f"--reference-frame-number: {self.target} has {frames} frames, so 0 to "
                                    f"{frames - 1}, got {number}")
        return read_frame(self.target, number), Path(f"{self.target} frame {number}")

    def _after_warmup(self, reader: Iterable[VideoFrame], frames: FrameLoop) -> Iterator[VideoFrame]:
        """A segment's warm-up frames are only analysed, so its tracks and smoothing start where a run through the
        whole video would have them; the rest go on to be swapped and written."""
        start = self.span.start_index if self.span is not None else 0
        for frame in reader:
            if frame.index < start:
                frames.analyse(frame.rgb, frame.time)
                continue
            yield frame

    def _stream(self, reader: Iterable[VideoFrame], frames: FrameLoop, writer: VideoWriter) -> None:
        """Frames are analysed in order in one thread (tracking needs the previous frame), rendered by the
        job's render threads (one when reuse links each frame to the last), and written in order. ONNX
        Runtime, OpenCV and FFmpeg do their work outside the GIL, so the threads share the cores."""
        workers = 1 if frames.reuse.enabled else max(1, self.render_workers)
        in_flight: deque[tuple[VideoFrame, Future[np.ndarray]]] = deque()
        with opencv_threads(1), ThreadPoolExecutor(1, "slimfuse-analyse") as analysis, \
                ThreadPoolExecutor(workers, "slimfuse-render") as render:
            try:
                for frame in reader:
                    targets = analysis.submit(frames.analyse, frame.rgb, frame.time)
                    in_flight.append((frame, render.submit(_render, frames, frame, targets)))
                    while len(in_flight) > workers + 1:
                        self._write_oldest(in_flight, writer)
            except VideoDecodeStoppedError:
                while in_flight:  # the frames that did decode are kept too
                    self._write_oldest(in_flight, writer)
                raise
            except BaseException:
                for _, pending in in_flight:
                    pending.cancel()
                raise
            while in_flight:
                self._write_oldest(in_flight, writer)

    def _in_chunks(self, reader: Iterable[VideoFrame], frames: FrameLoop, writer: VideoWriter) -> None:
        """Frames analysed in order and rendered a chunk at a time (the memory levels that say so): each
        processor runs over the whole chunk, in wide batches, before the next one loads."""
        chunk: list[tuple[VideoFrame, list[Target]]] = []

        def flush() -> None:
            if not chunk:
                return
            rendered = frames.render_many([FrameWork(frame.rgb, targets, frame.time) for frame, targets in chunk],
                                           overwrite=True)
            for (frame, _), rgb in zip(chunk, rendered, strict=True):
                writer.write(frame.with_rgb(rgb))
                self.progress.advance()
            chunk.clear()

        try:
            for frame in reader:
                chunk.append((frame, frames.analyse(frame.rgb, frame.time)))
                if len(chunk) >= self.queue_frames:
                    flush()
        except VideoDecodeStoppedError:
            flush()  # the frames that did decode are kept too
            raise
        flush()

    def _write_oldest(self, in_flight: deque[tuple[VideoFrame, Future[np.ndarray]]], writer: VideoWriter) -> None:
        frame, rendered = in_flight.popleft()
        writer.write(frame.with_rgb(rendered.result()))
        self.progress.advance()

    def _through_disk(self, reader: Iterable[VideoFrame], frames: FrameLoop, writer: VideoWriter,
                      temp: str) -> None:
        video = self.run.config.video
        with TempFrames(temp, root=video.temp_path, keep=video.keep_temp, notify=self.run.notify) as stored:
            stopped: VideoDecodeStoppedError | None = None
            try:
                stored.extract(reader)
            except VideoDecodeStoppedError as error:
                stopped = error  # the frames that did decode are still processed and kept (see _keep_partial)
            for frame in stored:
                stored.replace(frame.index, frames.process(frame.rgb, frame.time))
                self.progress.advance()
            stored.assemble(writer)
            if stopped is not None:
                raise stopped

    def _keep_partial(self, writer: VideoWriter, error: VideoDecodeStoppedError) -> None:
        """Finish the frames that decoded under a name of their own, and say where they are."""
        if writer.frames_written == 0 and self.progress.done == 0:
            return
        partial = partial_path(self.output)
        writer.close(partial)
        error.detail = f"{error.detail}; the {self.progress.done} frames before it are in {partial}"
        error.args = (error.message,)


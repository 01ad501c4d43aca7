"""Swap faces through a whole video.

Streaming (the default): a decoder thread and an encoder thread around the frame swapper, joined by bounded
queues, so memory stays flat however long the video is and nothing touches the disk but the output. Disk mode
(`--temp-frame-format`): frames go to a temporary directory first, for machines short of memory; it is removed
on success, error and Ctrl-C unless `--keep-temp`.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from slimfuse.cli.progress import Progress
from slimfuse.config import RunConfig
from slimfuse.errors import VideoDecodeStoppedError
from slimfuse.media.temp_frames import TempFrames
from slimfuse.media.video_encoding import EncodeSettings
from slimfuse.media.video_probe import VideoInfo, probe
from slimfuse.media.video_reader import VideoFrame, VideoReader
from slimfuse.media.video_writer import VideoWriter
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.neural.frame_enhancers import SCALES
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Notify
from slimfuse.pipeline.frames import FrameStats, FrameSwapper, Target
from slimfuse.pipeline.image import ImageSwapper, refuse_overwriting_inputs
from slimfuse.pipeline.report import StageHook
from slimfuse.pipeline.reuse import ReuseOptions

# Reuse threshold when --reuse-threshold is not given and the swapper is a neural generator.
NEURAL_REUSE_THRESHOLD = 2.0


@dataclass(frozen=True)
class TempFrameOptions:
    format: str
    root: Path | None = None
    keep: bool = False


@dataclass(frozen=True)
class VideoResult:
    output: Path
    info: VideoInfo
    frames_written: int
    stats: FrameStats
    setup_seconds: float
    """Model loading and source preparation, before the first frame."""


def _render(frames: FrameSwapper, frame: VideoFrame, targets: Future[list[Target]]) -> np.ndarray:
    return frames.render(frame.rgb, targets.result())


def partial_path(output: Path) -> Path:
    """Where the frames before a decoding error are kept: beside the output, never under its name."""
    return output.with_name(f"{output.stem}.partial{output.suffix}")


def reuse_options(config: RunConfig) -> ReuseOptions:
    threshold = config.reuse_threshold
    if threshold is None:
        threshold = 0.0 if config.face_swapper_model == "mesh" else NEURAL_REUSE_THRESHOLD
    return ReuseOptions(threshold=threshold, max_frames=config.reuse_max_frames)


class VideoSwapJob:
    def __init__(self, config: RunConfig, pool: ModelPool, notify: Notify, encode: EncodeSettings,
                 progress: Progress, temp: TempFrameOptions | None = None, stage: StageHook | None = None,
                 batcher: AdaptiveBatcher | None = None, queue_frames: int | None = None,
                 decoder_threads: int = 0, render_workers: int | None = None) -> None:
        """batcher: the run's batch sizes and out-of-memory back-off; queue_frames: frames each queue (and chunk)
        holds, render_workers: frames rendered at once when streaming (defaults: the memory level's);
        decoder_threads: 0 lets FFmpeg choose (the encoder's are in `encode`)."""
        self.decoder_threads = decoder_threads
        self.render_workers = config.memory_level.render_workers if render_workers is None else render_workers
        self.config = config
        self.batcher = batcher
        self.queue_frames = max(1, config.memory_level.queue_frames if queue_frames is None else queue_frames)
        self.stage: StageHook = stage or (lambda name: None)
        self.pool = pool
        self.notify = notify
        self.encode = encode
        self.progress = progress
        self.temp = temp

    def run(self) -> VideoResult:
        started = time.perf_counter()
        config = self.config
        refuse_overwriting_inputs(config)
        info = probe(config.target)
        written = info
        if config.frame_enhancer_model != "none" and config.frame_enhancer_keep_scale:
            scale = SCALES[config.frame_enhancer_model]  # frames come out of the enhancer this much larger
            written = replace(info, width=info.width * scale, height=info.height * scale)
        start, end = config.trim_frame_start, config.trim_frame_end
        swapper = ImageSwapper(self.config, self.pool, self.notify, self.batcher)
        self.stage("models")
        frames = FrameSwapper(swapper, config, reuse_options(config))
        self.stage("sources")
        estimated = info.estimated_frames
        if self.progress.total is None and estimated is not None:
            self.progress.total = max(0, (min(end, estimated) if end is not None else estimated) - start)
        writer = VideoWriter(config.output, written, self.encode, trim_start=start, trim_end=end,
                             queue_size=self.queue_frames, notify=self.notify)
        setup_seconds = time.perf_counter() - started
        with writer:
            with VideoReader(config.target, start=start, end=end, queue_size=self.queue_frames, info=info,
                             threads=self.decoder_threads) as reader:
                try:
                    if self.temp is None and config.memory_level.chunked:
                        self._in_chunks(reader, frames, writer)
                    elif self.temp is None:
                        self._stream(reader, frames, writer)
                    else:
                        self._through_disk(reader, frames, writer, self.temp)
                except VideoDecodeStoppedError as error:
                    self._keep_partial(writer, error)
                    raise
            self.stage("processing")
            stats = frames.stats()
            del frames, swapper  # they hold sessions too; the encoder's flush gets the memory back
            self.pool.release_all()
        self.stage("write")
        return VideoResult(config.output, info, writer.frames_written, stats, setup_seconds)

    def _stream(self, reader: Iterable[VideoFrame], frames: FrameSwapper, writer: VideoWriter) -> None:
        """Frames are analysed in order in one thread (tracking needs the previous frame), rendered by the
        job's render threads (one when reuse links each frame to the last), and written in order. ONNX
        Runtime, OpenCV and FFmpeg do their work outside the GIL, so the threads share the cores."""
        workers = 1 if frames.reuse.enabled else max(1, self.render_workers)
        in_flight: deque[tuple[VideoFrame, Future[np.ndarray]]] = deque()
        with ThreadPoolExecutor(1, "slimfuse-analyse") as analysis, ThreadPoolExecutor(workers, "slimfuse-render") as render:
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

    def _in_chunks(self, reader: Iterable[VideoFrame], frames: FrameSwapper, writer: VideoWriter) -> None:
        """Frames analysed in order and rendered a chunk at a time (the memory levels that say so): each
        processor runs over the whole chunk, in wide batches, before the next one loads."""
        chunk: list[tuple[VideoFrame, list[Target]]] = []

        def flush() -> None:
            if not chunk:
                return
            rendered = frames.render_many([(frame.rgb, targets) for frame, targets in chunk])
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

    def _through_disk(self, reader: Iterable[VideoFrame], frames: FrameSwapper, writer: VideoWriter,
                      temp: TempFrameOptions) -> None:
        with TempFrames(temp.format, root=temp.root, keep=temp.keep, notify=self.notify) as stored:
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
        partial = partial_path(self.config.output)
        writer.close(partial)
        error.detail = f"{error.detail}; the {self.progress.done} frames before it are in {partial}"
        error.args = (error.message,)


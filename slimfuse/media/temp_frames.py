"""The optional disk mode (`--temp-frame-format jpg|png|bmp`): frames go to a temporary directory, are processed
there, and are assembled back into a video with their original timestamps and the input's audio.

Streaming (video_reader, video_writer) is the default and needs no disk; this mode exists for the low-memory recipes that process
frames in several passes. Each file is named by frame index, pts and duration (`00000042_pts21504_dur512.png`),
and `timing.json` holds the time base, so the timing survives on disk. The directory is removed when the `with`
block ends, whether it ends normally, by an error or by Ctrl-C, unless `keep` is set. Its name carries the owning
process id and machine (`slimfuse-frames-<pid>@<host>-XXXX`), so a run removes the directories of runs on this
machine that were killed (`kill -9`) and reports them.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from types import TracebackType

import cv2
import numpy as np

from slimfuse.atomic import host_tag, remove_stale, write_bytes_atomic, write_error
from slimfuse.errors import InputCorruptError, NoSpaceError, OutputDirMissingError, OutputUnwritableError
from slimfuse.media.formats import FRAME_FORMATS
from slimfuse.media.video_reader import VideoFrame
from slimfuse.media.video_writer import VideoWriter

DIR_PREFIX = "slimfuse-frames-"
_OWNED_DIR = re.compile(rf"^{DIR_PREFIX}(?P<pid>\d+)@(?P<host>[A-Za-z0-9-]+)-[A-Za-z0-9_]+$")
# jpg at 95 keeps faces free of visible blocking; png at level 1 with run-length matching is the fastest zlib
# setting (about 2x faster to write than level 3, for a few percent more disk).
ENCODE_PARAMS = {
    "jpg": [cv2.IMWRITE_JPEG_QUALITY, 95],
    "png": [cv2.IMWRITE_PNG_COMPRESSION, 1, cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE],
    "bmp": [],
}


class TempFrames:
    """Frames of one video in a temporary directory.

        with TempFrames("png", root=temp_path) as frames:
            frames.extract(reader)
            for frame in frames:
                frames.replace(frame.index, process(frame.rgb))
            frames.assemble(writer)
    """

    def __init__(self, fmt: str = "png", root: Path | None = None, keep: bool = False,
                 notify: Callable[[str], None] = lambda message: None) -> None:
        if fmt not in FRAME_FORMATS:
            raise ValueError(f"temp frame format must be one of {', '.join(FRAME_FORMATS)}, not '{fmt}'")
        self.fmt = fmt
        self.root = root
        self.keep = keep
        self._notify = notify
        self._dir: Path | None = None
        self._frames: list[tuple[int, int, int]] = []  # (index, pts, duration): a few bytes per frame
        self._time_base = Fraction(1, 1)

    @property
    def path(self) -> Path:
        if self._dir is None:
            raise RuntimeError("TempFrames is used outside its `with` block")
        return self._dir

    def __enter__(self) -> TempFrames:
        if self.root is not None and not Path(self.root).is_dir():
            raise OutputDirMissingError(self.root, f"--temp-path {self.root} is not a directory")
        remove_stale(Path(self.root or tempfile.gettempdir()), self._notify, frames_owner)
        try:
            self._dir = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}@{host_tag()}-", dir=self.root))
        except OSError as exc:
            raise _error(Path(self.root or tempfile.gettempdir()), exc) from exc
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._dir is None:
            return
        if self.keep:
            self._notify(f"temp frames kept in {self._dir}")
        else:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def __len__(self) -> int:
        return len(self._frames)

    def extract(self, frames: Iterable[VideoFrame]) -> int:
        """Write every frame (a VideoReader, or any iterable of frames) to disk; returns how many. If the frames
        stop with an error (a decoding error), the ones written so far stay usable."""
        try:
            for frame in frames:
                self._time_base = frame.time_base
                self._write(self._file(frame.index, frame.pts, frame.duration), frame.rgb)
                self._frames.append((frame.index, frame.pts, frame.duration))
        finally:
            timing = {"time_base": str(self._time_base), "format": self.fmt, "frames": len(self._frames)}
            try:
                (self.path / "timing.json").write_text(json.dumps(timing))
            except OSError:
                pass  # a note for people who keep the directory; the error already on its way out matters more
        return len(self._frames)

    def __iter__(self) -> Iterator[VideoFrame]:
        """The frames, read back from disk one at a time, in order."""
        for index, pts, duration in self._frames:
            yield VideoFrame(index, pts, self._time_base, self._read(self._file(index, pts, duration)), duration)

    def replace(self, index: int, rgb: np.ndarray) -> None:
        """Overwrite frame `index` with processed pixels (atomically: a crash leaves the old or the new frame)."""
        position = self._position(index)
        _, pts, duration = self._frames[position]
        self._write(self._file(index, pts, duration), rgb)

    def assemble(self, writer: VideoWriter) -> None:
        """Encode every frame, with its original timestamp, through `writer` (which adds the audio); the caller
        closes the writer."""
        for frame in self:
            writer.write(frame)

    def _position(self, index: int) -> int:
        # Frames are stored in index order with no gaps once trimmed, so the position is an offset.
        if not self._frames:
            raise KeyError(index)
        position = index - self._frames[0][0]
        if not 0 <= position < len(self._frames) or self._frames[position][0] != index:
            raise KeyError(index)
        return position

    def _file(self, index: int, pts: int, duration: int) -> Path:
        return self.path / f"{index:08d}_pts{pts}_dur{duration}.{self.fmt}"

    def _write(self, path: Path, rgb: np.ndarray) -> None:
        order = cv2.COLOR_RGBA2BGRA if rgb.shape[2] == 4 else cv2.COLOR_RGB2BGR  # a transparent background's
        ok, data = cv2.imencode(f".{self.fmt}", cv2.cvtColor(rgb, order), ENCODE_PARAMS[self.fmt])
        if not ok:
            raise OutputUnwritableError(path, f"cannot encode the frame as {self.fmt}")
        try:
            write_bytes_atomic(path, data.tobytes(), durable=False)
        except OSError as exc:
            raise _error(path, exc) from exc

    def _read(self, path: Path) -> np.ndarray:
        bgr = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if bgr is None or bgr.ndim != 3:
            raise InputCorruptError(path, "temp frame is missing or unreadable")
        return cv2.cvtColor(bgr, cv2.COLOR_BGRA2RGBA if bgr.shape[2] == 4 else cv2.COLOR_BGR2RGB)


def frames_owner(name: str) -> int | None:
    """The owning process id of a frame directory of this machine, from its name; None for any other name."""
    match = _OWNED_DIR.match(name)
    return int(match.group("pid")) if match and match.group("host") == host_tag() else None


def _error(path: Path, exc: OSError) -> NoSpaceError | OutputUnwritableError:
    return write_error(path, exc, "temp frames")

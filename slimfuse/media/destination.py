"""An output path's checks before any work: checked once, where a job enters (the swap command, the Python API's
calls, a batch item), so a wrong path is refused at once, before a model or a frame is loaded."""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from slimfuse.atomic import check_destination
from slimfuse.errors import OutputIsInputError, OutputUnwritableError, UnsupportedTypeError, UsageError
from slimfuse.media.formats import ALPHA_SUFFIXES, CONTAINERS, IMAGE_SUFFIXES


def is_video(path: Path) -> bool:
    """Whether a target or output path names a video (by its extension)."""
    return path.suffix.lower() in CONTAINERS


def image_format(path: Path) -> str:
    """The PIL format an image output's extension asks for (UnsupportedTypeError for another extension)."""
    fmt = IMAGE_SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise UnsupportedTypeError(path, f"unsupported output type '{path.suffix}' (use {', '.join(IMAGE_SUFFIXES)})")
    return fmt


def check_output(output: Path, target: Path | None, inputs: Sequence[Path] = (), alpha: bool = False) -> None:
    """Every condition on the output that can be checked before any work: it is not a folder, its type matches the
    target's (None: an image in memory) and holds an alpha channel when the run gives one (`alpha`: a transparent
    background), its folder exists and is writable, its name fits the file system, and it is none of the inputs
    (the target, and `inputs`: the sources, a reference photo; also through a link)."""
    if output.is_dir():
        raise OutputUnwritableError(output, "the output is a folder; give a file name")
    if alpha and output.suffix.lower() not in ALPHA_SUFFIXES:
        raise UsageError(output, f"a transparent background needs an output with alpha ({', '.join(ALPHA_SUFFIXES)}"
                                 "); for an opaque one give --background-remover-fill-color R G B or "
                                 "--background-remover-blur PX")
    if target is not None and is_video(target):
        if not is_video(output):
            raise UsageError(output, f"a video target needs a video output ({', '.join(CONTAINERS)})")
    else:
        image_format(output)
    check_destination(output)
    for path in (*([] if target is None else [target]), *inputs):
        same = output.resolve() == path.resolve()
        if not same and output.exists() and path.exists():
            same = os.path.samefile(output, path)
        if same:
            raise OutputIsInputError(output)

"""What a server's job does, apart from the job store: a swap, a preview or a face list, run with one kept
slimfuse.Swapper (its models stay loaded while jobs come with the same sources and options).

A job's files are named relative to a folder: its inputs (`assets/ID.png`) and its output (`outputs/ID.mp4`,
`scratch/ID.jpg`). A worker process on the server's machine runs jobs in the data dir itself; a Ray actor on another
node runs them in a folder of its own, the inputs written there from the object store and the output sent back.
Progress goes to a callback that answers whether the job was cancelled (JobCancelled stops it at that frame; its
output, written under a temporary name, is removed)."""
from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from slimfuse.api import KeptSwapper, Swapper
from slimfuse.atomic import write_bytes_atomic
from slimfuse.media.formats import IMAGE_SUFFIXES
from slimfuse.media.image_io import read_image
from slimfuse.media.video_reader import read_frame
from slimfuse.serve.planning import CLIENT_OPTIONS
from slimfuse.serve.store import FACES, PREVIEW

PREVIEW_PX = 960
"""Previews are scaled down to at most this many pixels on their longer side."""
Progress = Callable[[int, int | None], bool]
"""(frames done, frames expected) -> whether the job was cancelled."""


class JobCancelled(Exception):
    """The user cancelled the running job."""


def job_inputs(request: dict[str, Any]) -> list[str]:
    """The files a job reads, relative to its folder."""
    return list(dict.fromkeys([*request.get("sources", ()), request["target"]]))


class JobRunner:
    def __init__(self, folder: Path, models_dir: Path | None = None, threads: int = 0) -> None:
        """folder: where the job's relative paths are; threads: ONNX Runtime threads per model (0: its own
        choice; a server shares the cores among its workers)."""
        self.folder = folder
        self.models_dir = models_dir
        self.threads = threads
        self._kept = KeptSwapper()

    def run(self, job_id: str, kind: str, request: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Run the job; its report, with `output` (relative) and `output_bytes`."""
        if kind == FACES:
            return self._faces(job_id, request)
        if kind == PREVIEW:
            return self._preview(job_id, request)
        return self._swap(job_id, request, progress)

    def close(self) -> None:
        self._kept.close()

    def _path(self, relative: str) -> Path:
        return self.folder / relative

    def _swapper_for(self, sources: list[str], options: dict[str, Any]) -> Swapper:
        """The kept Swapper when the sources and options are the same, else a new one (the old one released)."""
        return self._kept.get([str(self._path(source)) for source in sources], **options, models_dir=self.models_dir,
                              execution_thread_count=self.threads)

    def _swap(self, job_id: str, request: dict[str, Any], progress: Progress) -> dict[str, Any]:
        target = self._path(request["target"])
        options = dict(request["options"])
        reference = request.get("reference")
        if reference is not None:
            options["face_selector_mode"] = "reference"
            options["reference_face_position"] = int(reference["position"])
            options["reference_face_image"] = self._reference_image(job_id, target, int(reference.get("frame", 0)))
        swapper = self._swapper_for(request["sources"], options)
        relative = f"outputs/{job_id}{request['suffix']}"
        output = self._path(relative)
        output.parent.mkdir(parents=True, exist_ok=True)
        if request["kind"] == "video":
            result = swapper.swap_video(target, output, progress=_stopping(progress))
            report: dict[str, Any] = {"frames_written": result.frames_written, **asdict(result.stats),
                                      "setup_seconds": round(result.setup_seconds, 3)}
        else:
            swapper.swap_image(target, output=output)
            report = {"frames_written": 1}
        report["options"] = {name: _plain(value) for name, value in swapper.config.options().items()
                             if name in CLIENT_OPTIONS}  # not the server's own paths
        return {**report, "output": relative, "output_bytes": output.stat().st_size}

    def _reference_image(self, job_id: str, target: Path, frame: int) -> Path:
        """The picture the reference face is taken from: the target image, or the chosen frame of a video."""
        if target.suffix.lower() in IMAGE_SUFFIXES:
            return target
        path = self._path(f"scratch/{job_id}-reference.png")
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(read_frame(target, frame)).save(path)
        return path

    def _preview(self, job_id: str, request: dict[str, Any]) -> dict[str, Any]:
        rgb = _picture(self._path(request["target"]), int(request.get("frame", 0)))
        options = dict(request["options"])
        reference = request.get("reference")
        reference_rgb = None
        if reference is not None:
            options["reference_face_position"] = int(reference["position"])
            reference_rgb = rgb
        swapped = self._swapper_for(request["sources"], options).swap_image(rgb, reference=reference_rgb)
        image = Image.fromarray(swapped)
        image.thumbnail((PREVIEW_PX, PREVIEW_PX), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=90)
        return self._scratch(f"scratch/{job_id}.jpg", buffer.getvalue())

    def _faces(self, job_id: str, request: dict[str, Any]) -> dict[str, Any]:
        target = self._path(request["target"])
        rgb = _picture(target, int(request.get("frame", 0)))
        # any kept Swapper lists faces; without one, the target serves as its source
        lister = self._kept.current or self._swapper_for([request["target"]], {})
        faces = [{"index": index, "box": [round(value, 1) for value in face.box], "score": round(face.score, 3),
                  "thumbnail": _data_url(face.thumbnail)} for index, face in enumerate(lister.faces(rgb))]
        data = json.dumps({"faces": faces, "width": rgb.shape[1], "height": rgb.shape[0]}).encode()
        return {"faces": len(faces), **self._scratch(f"scratch/{job_id}.json", data)}

    def _scratch(self, relative: str, data: bytes) -> dict[str, Any]:
        path = self._path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data, durable=False)
        return {"output": relative, "output_bytes": len(data)}


def _stopping(progress: Progress) -> Callable[[int, int | None], None]:
    def report(done: int, total: int | None) -> None:
        if progress(done, total):
            raise JobCancelled()

    return report


def _picture(target: Path, frame: int) -> np.ndarray:
    if target.suffix.lower() in IMAGE_SUFFIXES:
        return read_image(target).rgb
    return read_frame(target, frame)


def _data_url(rgb: np.ndarray) -> str:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _plain(value: object) -> object:
    """A config value as JSON holds it."""
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)

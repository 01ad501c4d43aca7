"""The Python API: `slimfuse.Swapper`, what the command line, the server, live mode and batch work are built on.

    from slimfuse import Swapper

    with Swapper(["me.jpg"], face_enhancer_model="gfpgan_1.4", memory_budget=2000) as swapper:
        faces = swapper.faces("group.jpg")                 # boxes, landmarks, scores, thumbnails
        swapped = swapper.swap_image("group.jpg")           # an RGB array
        swapper.swap_image("photo.png", output="out.png")   # written atomically, labelled as synthetic
        swapper.swap_video("clip.mp4", "out.mp4", progress=lambda done, total: None)
        for frame in swapper.stream(camera_frames):          # RGB arrays in, RGB arrays out, tracking kept
            ...

Options are named as the `slimfuse swap` options (`--face-swapper-model` is `face_swapper_model=`) and checked
with the same one-line messages (UsageError). Errors are the typed exceptions of slimfuse.errors, each with the
exit code the command line uses; the library never exits. Models load on first use and stay shared by every
call; calls are serialised by a lock, so one Swapper may be shared by threads (they take turns).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from slimfuse.config import RunConfig
from slimfuse.errors import UsageError
from slimfuse.faces.align import five_points
from slimfuse.faces.types import Face
from slimfuse.media.destination import check_output
from slimfuse.media.image_io import read_image, write_image_atomic
from slimfuse.media.video_reader import FrameSpan
from slimfuse.pipeline.image import at_output_scale, swap_frame, swap_image_file
from slimfuse.pipeline.run import Run, SourceImage, build_run
from slimfuse.pipeline.video import CountingProgress, VideoResult, VideoSwapJob

ImageInput = np.ndarray | str | Path
"""An RGB uint8 array (H x W x 3), or the path of an image file."""
ProgressCallback = Callable[[int, int | None], None]
"""Called with (frames done, frames expected or None) as a video goes through."""
# Thumbnails in the face list are this many pixels on their longer side.
THUMBNAIL_PX = 112


@dataclass(frozen=True)
class FaceInfo:
    """One face found in an image, for a face gallery or reference selection."""

    box: tuple[float, float, float, float]
    """x0, y0, x1, y1 in the image's pixels."""
    score: float
    landmarks: np.ndarray
    """(468, 3) FaceMesh points."""
    five_points: np.ndarray
    """(5, 2) eyes, nose tip, mouth corners."""
    thumbnail: np.ndarray
    """The face's box with a margin, RGB, at most THUMBNAIL_PX on its longer side."""
    identity: np.ndarray | None = None
    """The recognizer's descriptor (with identity=True)."""


class Swapper:
    def __init__(self, sources: Sequence[ImageInput], **options: object) -> None:
        """sources: photos of the person whose face is put in (paths or RGB arrays). options: as `slimfuse swap`'s,
        e.g. face_swapper_model="inswapper_128", models_dir="~/models", memory_budget=2000 (MB)."""
        paths = [Path(source) for source in sources if not isinstance(source, np.ndarray)]
        self.config = RunConfig.from_options(paths, **options)
        if not sources:
            self.config.check_sources()
        in_memory = None
        if any(isinstance(source, np.ndarray) for source in sources):
            in_memory = [_source_image(source, index) for index, source in enumerate(sources)]
        self._run: Run = build_run(self.config, sources=in_memory)
        self._lock = threading.Lock()

    def faces(self, image: ImageInput, identity: bool = False) -> list[FaceInfo]:
        """Every face of the image, largest first."""
        rgb = _rgb(image)
        with self._lock:
            found = self._run.faces(rgb)
            return [self._describe(rgb, face, identity) for face in found]

    def swap_image(self, image: ImageInput, output: str | Path | None = None,
                   reference: ImageInput | None = None) -> np.ndarray:
        """The image with the selected faces swapped, as an RGB array; with `output`, also written there
        (atomically; a target file keeps its alpha, colour profile and 16-bit depth). reference: a photo of the
        person to replace (reference selection for this call). NoTargetFaceError when no face is selected."""
        reference_rgb = None if reference is None else _rgb(reference)
        path = None if isinstance(image, np.ndarray) else Path(image)
        if output is not None:
            check_output(Path(output), path, self.config.inputs)
        with self._lock:
            if output is not None and path is not None:
                written = swap_image_file(self._run, path, Path(output), reference_rgb).output
                return read_image(written).rgb
            rgb = _rgb(image)
            result, _ = swap_frame(self._run, rgb, Path("image"), reference_rgb)
            if output is not None:
                result = at_output_scale(result, rgb.shape, self.config.output.output_image_scale)
                write_image_atomic(Image.fromarray(result), Path(output),
                                   quality=self.config.output.output_image_quality,
                                   provenance=self._run.provenance, notify=self._run.notify)
            return result

    def swap_video(self, path: str | Path, output: str | Path,
                   progress: ProgressCallback | None = None, span: FrameSpan | None = None) -> VideoResult:
        """Swap every frame of a video into `output` (streamed, atomically written, audio and timestamps kept).
        span: only this keyframe segment, video only (what slimfuse.batch joins into the whole)."""
        target, destination = Path(path), Path(output)
        check_output(destination, target, self.config.inputs)
        with self._lock:
            job = VideoSwapJob(self._run, target, destination, _CallbackProgress(progress), span)
            return job.run_job()

    def stream(self, frames: Iterable[np.ndarray], fps: float = 30.0) -> Iterator[np.ndarray]:
        """RGB frames in, swapped RGB frames out, one for one and in order; faces are tracked across frames.
        Each frame takes the lock, so other calls can run between frames."""
        source = iter(frames)
        with self._lock:
            loop = self._run.loop(self._run.prepare(keep_identity=True))
        for index, rgb in enumerate(source):
            with self._lock:
                swapped = loop.process(_rgb(rgb), index / fps)
            yield swapped

    def close(self) -> None:
        """Release every model and arena."""
        with self._lock:
            self._run.close()

    def __enter__(self) -> Swapper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _describe(self, rgb: np.ndarray, face: Face, identity: bool) -> FaceInfo:
        assert face.landmarks is not None  # the analyser returns only faces with a mesh
        x0, y0, x1, y1 = (float(value) for value in face.box)
        return FaceInfo(box=(x0, y0, x1, y1), score=float(face.score), landmarks=face.landmarks.copy(),
                        five_points=five_points(face.landmarks), thumbnail=_thumbnail(rgb, face.box),
                        identity=self._run.recognizer.descriptor(rgb, face) if identity else None)


class KeptSwapper:
    """One Swapper kept while the sources and options stay the same (a worker's run of jobs keeps its models),
    replaced, the old one closed, when they change."""

    def __init__(self) -> None:
        self.current: Swapper | None = None
        self._key: str | None = None

    def get(self, sources: Sequence[str | Path], **options: object) -> Swapper:
        key = json.dumps([[str(source) for source in sources], options], sort_keys=True, default=str)
        if self.current is None or key != self._key:
            self.close()
            self.current, self._key = Swapper(list(sources), **options), key
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current, self._key = None, None


class _CallbackProgress(CountingProgress):
    def __init__(self, callback: ProgressCallback | None) -> None:
        super().__init__()
        self.callback = callback

    def advance(self, frames: int = 1) -> None:
        super().advance(frames)
        if self.callback is not None:
            self.callback(self.done, self.total)


def _rgb(image: ImageInput) -> np.ndarray:
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            raise UsageError(detail=f"an image array must be H x W x 3 uint8 RGB, got {image.dtype} {image.shape}")
        return np.ascontiguousarray(image)
    return read_image(Path(image)).rgb


def _source_image(source: ImageInput, index: int) -> SourceImage:
    if isinstance(source, np.ndarray):
        return SourceImage(f"source {index}", _rgb(source))
    return SourceImage(str(source), _rgb(source))


def _thumbnail(rgb: np.ndarray, box: np.ndarray) -> np.ndarray:
    """The box grown by a quarter on each side, clipped to the image, scaled down to THUMBNAIL_PX."""
    x0, y0, x1, y1 = (float(value) for value in box)
    margin = 0.25 * max(x1 - x0, y1 - y0)
    height, width = rgb.shape[:2]
    left, top = int(max(0, x0 - margin)), int(max(0, y0 - margin))
    right, bottom = int(min(width, x1 + margin)), int(min(height, y1 + margin))
    crop = Image.fromarray(rgb[top:bottom, left:right])
    crop.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX), Image.Resampling.LANCZOS)
    return np.asarray(crop)

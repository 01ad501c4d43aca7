"""Clips built with PyAV from the packaged photos, for the benchmarks and the tests: camera motions over a
photo, two faces crossing, a still shot, constant or variable frame rate, rotation tags, odd sizes, and a generated
sine-tone audio track.

A motion is a list of `Pose`s (where the photo's face lands in each frame); `render` draws one pose, so a test can
both build the frames and know where each face is (`face_box`).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import cast

import av
import cv2
import numpy as np

from slimfuse.samples import ASTRONAUT_FACE, GRACE_HOPPER_FACE

BACKGROUND = 90
AUDIO_RATE = 48000
TONE_HZ = 440.0
# The audio codec each container takes without re-encoding.
AUDIO_CODECS = {".mp4": "aac", ".mov": "aac", ".mkv": "aac", ".webm": "libopus", ".avi": "libmp3lame"}
FORMATS = {".mp4": "mp4", ".mov": "mov", ".mkv": "matroska", ".webm": "webm", ".avi": "avi"}


@dataclass(frozen=True)
class Pose:
    """The photo's face centre lands at (cx, cy), `face_px` wide, turned `angle` degrees counter-clockwise."""

    cx: float
    cy: float
    face_px: float
    angle: float = 0.0


def _matrix(face: tuple[int, int, int, int], pose: Pose) -> np.ndarray:
    scale = pose.face_px / (face[2] - face[0])
    centre = ((face[0] + face[2]) / 2, (face[1] + face[3]) / 2)
    matrix = cv2.getRotationMatrix2D(centre, pose.angle, scale)
    matrix[:, 2] += np.array([pose.cx - centre[0], pose.cy - centre[1]])
    return matrix


def render(photo: np.ndarray, face: tuple[int, int, int, int], pose: Pose, size: tuple[int, int],
           canvas: np.ndarray | None = None) -> np.ndarray:
    """Draw `photo` at `pose` on a grey canvas of `size` (width, height), or over `canvas`."""
    width, height = size
    matrix = _matrix(face, pose)
    warped = cv2.warpAffine(photo, matrix, (width, height), flags=cv2.INTER_LINEAR, borderValue=(BACKGROUND,) * 3)
    if canvas is None:
        return warped
    inside = cv2.warpAffine(np.full(photo.shape[:2], 255, np.uint8), matrix, (width, height)) > 127
    out = canvas.copy()
    out[inside] = warped[inside]
    return out


def face_box(face: tuple[int, int, int, int], pose: Pose) -> tuple[float, float, float, float]:
    """Axis-aligned box of the photo's face box after the pose (corners transformed)."""
    corners = np.array([[face[0], face[1], 1], [face[2], face[1], 1], [face[0], face[3], 1], [face[2], face[3], 1]],
                       dtype=np.float64)
    points = corners @ _matrix(face, pose).T
    return (float(points[:, 0].min()), float(points[:, 1].min()), float(points[:, 0].max()), float(points[:, 1].max()))


def _ramp(count: int) -> Iterator[float]:
    """0..1 over `count` frames, eased so the motion starts and ends smoothly."""
    for index in range(count):
        t = index / max(count - 1, 1)
        yield 0.5 - 0.5 * math.cos(math.pi * t)


def still_poses(size: tuple[int, int], count: int, face_px: float = 160) -> list[Pose]:
    return [Pose(size[0] / 2, size[1] / 2, face_px)] * count


def pan_poses(size: tuple[int, int], count: int, face_px: float = 160) -> list[Pose]:
    """The camera pans left to right: the face moves across the middle third of the frame."""
    width, height = size
    return [Pose(width * (2 / 3 - t / 3), height / 2, face_px) for t in _ramp(count)]


def zoom_poses(size: tuple[int, int], count: int, face_px: float = 160) -> list[Pose]:
    """The camera zooms in: the face grows from 0.6x to 1.4x `face_px`."""
    return [Pose(size[0] / 2, size[1] / 2, face_px * (0.6 + 0.8 * t)) for t in _ramp(count)]


def roll_poses(size: tuple[int, int], count: int, face_px: float = 160, degrees: float = 30) -> list[Pose]:
    """The camera rolls from -degrees to +degrees around the face."""
    return [Pose(size[0] / 2, size[1] / 2, face_px, -degrees + 2 * degrees * t) for t in _ramp(count)]


def frames_of(photo: np.ndarray, poses: Iterable[Pose], size: tuple[int, int],
              face: tuple[int, int, int, int] = GRACE_HOPPER_FACE) -> Iterator[np.ndarray]:
    for pose in poses:
        yield render(photo, face, pose, size)


def still(photo: np.ndarray, size: tuple[int, int] = (640, 360), count: int = 25,
          face: tuple[int, int, int, int] = GRACE_HOPPER_FACE, face_px: float = 160) -> Iterator[np.ndarray]:
    """The same picture every frame (rendered once)."""
    frame = render(photo, face, still_poses(size, 1, face_px)[0], size)
    for _ in range(count):
        yield frame


def pan(photo: np.ndarray, size: tuple[int, int] = (1280, 720), count: int = 50,
        face: tuple[int, int, int, int] = GRACE_HOPPER_FACE, face_px: float = 160) -> Iterator[np.ndarray]:
    return frames_of(photo, pan_poses(size, count, face_px), size, face)


def zoom(photo: np.ndarray, size: tuple[int, int] = (1280, 720), count: int = 50,
         face: tuple[int, int, int, int] = GRACE_HOPPER_FACE, face_px: float = 160) -> Iterator[np.ndarray]:
    return frames_of(photo, zoom_poses(size, count, face_px), size, face)


def roll(photo: np.ndarray, size: tuple[int, int] = (1280, 720), count: int = 50,
         face: tuple[int, int, int, int] = GRACE_HOPPER_FACE, face_px: float = 160,
         degrees: float = 30) -> Iterator[np.ndarray]:
    return frames_of(photo, roll_poses(size, count, face_px, degrees), size, face)


def crossing_poses(size: tuple[int, int], count: int, face_px: float = 140) -> tuple[list[Pose], list[Pose]]:
    """Two faces walking past each other: the first goes left to right a little higher, the second right to left."""
    width, height = size
    first = [Pose(width * (0.2 + 0.6 * t), height * 0.45, face_px) for t in _ramp(count)]
    second = [Pose(width * (0.8 - 0.6 * t), height * 0.55, face_px) for t in _ramp(count)]
    return first, second


def crossing(grace_hopper: np.ndarray, astronaut: np.ndarray, size: tuple[int, int] = (1280, 720),
             count: int = 50, face_px: float = 140) -> Iterator[np.ndarray]:
    """Grace Hopper (behind) and the astronaut (in front) cross the frame in opposite directions."""
    first, second = crossing_poses(size, count, face_px)
    for left, right in zip(first, second, strict=True):
        back = render(grace_hopper, GRACE_HOPPER_FACE, left, size)
        yield render(astronaut, ASTRONAUT_FACE, right, size, canvas=back)


def tone(seconds: float, rate: int = AUDIO_RATE, hz: float = TONE_HZ) -> np.ndarray:
    """A stereo sine tone as float32 samples, shape (2, n): planar, as PyAV's 'fltp' frames want."""
    t = np.arange(int(round(seconds * rate))) / rate
    mono = (0.3 * np.sin(2 * math.pi * hz * t)).astype(np.float32)
    return np.stack([mono, mono])


def cfr_pts(count: int, fps: Fraction, time_base: Fraction) -> list[int]:
    return [int(round(index / fps / time_base)) for index in range(count)]


def vfr_pattern(count: int, time_base: Fraction = Fraction(1, 90000)) -> list[int]:
    """Irregular gaps (between 1/60 s and 1/10 s), as a phone recording in low light has."""
    gaps = [Fraction(1, 60), Fraction(1, 30), Fraction(1, 24), Fraction(1, 10), Fraction(1, 30), Fraction(1, 15)]
    times = [sum(gaps[index % len(gaps)] for index in range(i)) for i in range(count)]
    return [int(round(Fraction(t) / time_base)) for t in times]


def make_clip(path: Path, frames: Iterable[np.ndarray], fps: float | Fraction = 25,
              vfr_pts: list[int] | None = None, time_base: Fraction | None = None, codec: str = "libx264",
              audio: bool = False, audio_seconds: float | None = None, audio_codec: str | None = None,
              rotation: int | None = None, preset: str = "ultrafast", crf: int = 18,
              faststart: bool = False, gop: int | None = None) -> Path:
    """Encode `frames` (RGB uint8, all one size, any size) into `path`, the container chosen by its extension.

    fps: the constant rate, unless `vfr_pts` gives every frame's pts in `time_base` (default 1/90000).
    audio: add a sine tone of `audio_seconds` (default: the video's length) in `audio_codec` (default: what the
      container takes; see AUDIO_CODECS).
    rotation: the old `rotate` tag, degrees a player turns the stored picture clockwise to show it upright
      (phones write 90); the frames given are stored as they are.
    Sizes that yuv420p cannot hold (odd ones) are encoded as yuv444p. gop: at most this many frames between
    keyframes (default: the encoder's own, 250 for x264).
    """
    suffix = path.suffix.lower()
    fps = Fraction(fps).limit_denominator(1001 * 1000)
    time_base = time_base or (Fraction(1, 90000) if vfr_pts is not None else 1 / fps)
    options = {"movflags": "+faststart"} if faststart else {}
    with av.open(str(path), "w", format=FORMATS[suffix], options=options) as container:
        video = None
        audio_stream = None
        frame_iter = iter(frames)
        first = next(frame_iter)
        height, width = first.shape[:2]
        video = _add_video(container, codec, fps, time_base, width, height, preset, crf)
        if gop is not None:
            video.codec_context.gop_size = gop
        if suffix == ".avi":
            video.codec_context.max_b_frames = 0  # AVI stores no presentation times
        if rotation:
            video.set_display_rotation(-rotation)
        if audio:
            audio_stream = _add_audio(container, audio_codec or AUDIO_CODECS[suffix])
        index = -1
        for index, rgb in enumerate(_chain(first, frame_iter)):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
            frame = frame.reformat(format=video.codec_context.pix_fmt, dst_colorspace="ITU709")
            frame.pts = vfr_pts[index] if vfr_pts is not None else int(round(index / fps / time_base))
            frame.time_base = time_base
            container.mux(video.encode(frame))
        container.mux(video.encode())
        if audio_stream is not None:
            seconds = audio_seconds if audio_seconds is not None else _video_seconds(index + 1, fps, vfr_pts, time_base)
            _write_tone(container, audio_stream, seconds)
    return path


def _chain(first: np.ndarray, rest: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    yield first
    yield from rest


def _add_video(container: av.container.OutputContainer, codec: str, fps: Fraction, time_base: Fraction,
               width: int, height: int, preset: str, crf: int) -> av.video.stream.VideoStream:
    options = {"preset": preset, "crf": str(crf)} if codec in ("libx264", "libx265") else {}
    if codec == "libx265":
        options["x265-params"] = "log-level=error"
    video = cast(av.video.stream.VideoStream, container.add_stream(codec, rate=fps, options=options))
    video.width, video.height = width, height
    odd = width % 2 or height % 2
    video.pix_fmt = "yuv444p" if odd and codec in ("libx264", "libx265") else "yuv420p"
    if codec in ("mpeg4", "mjpeg"):
        video.pix_fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
    video.time_base = time_base
    video.codec_context.time_base = time_base
    video.codec_context.colorspace = 1  # BT.709, matching the conversion above
    video.codec_context.color_range = 1  # limited (tv) range
    return video


def _add_audio(container: av.container.OutputContainer, codec: str) -> av.audio.stream.AudioStream:
    return cast(av.audio.stream.AudioStream, container.add_stream(codec, rate=AUDIO_RATE, layout="stereo"))


def _video_seconds(count: int, fps: Fraction, vfr_pts: list[int] | None, time_base: Fraction) -> float:
    if vfr_pts is None:
        return float(count / fps)
    step = vfr_pts[-1] - vfr_pts[-2] if len(vfr_pts) > 1 else int(1 / fps / time_base)
    return float((vfr_pts[-1] + step) * time_base)


def _write_tone(container: av.container.OutputContainer, stream: av.audio.stream.AudioStream, seconds: float) -> None:
    samples = tone(seconds)
    chunk = 1024
    for start in range(0, samples.shape[1], chunk):
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples[:, start:start + chunk]), format="fltp",
                                           layout="stereo")
        frame.sample_rate = AUDIO_RATE
        frame.pts = start
        frame.time_base = Fraction(1, AUDIO_RATE)
        container.mux(stream.encode(frame))
    container.mux(stream.encode())


def audio_only(path: Path, seconds: float = 1.0) -> Path:
    """A file with a sine tone and no video stream."""
    suffix = path.suffix.lower()
    with av.open(str(path), "w", format=FORMATS[suffix]) as container:
        stream = _add_audio(container, AUDIO_CODECS[suffix])
        _write_tone(container, stream, seconds)
    return path


def no_frames(path: Path, size: tuple[int, int] = (64, 48)) -> Path:
    """An AVI file with an MPEG-4 video stream that holds no frame (AVI, because mp4 drops an empty track and
    Matroska cannot be opened without the first frame's codec data)."""
    with av.open(str(path), "w", format="avi") as container:
        _add_video(container, "mpeg4", Fraction(25), Fraction(1, 25), size[0], size[1], "ultrafast", 18)
        container.start_encoding()
    return path

"""Video encoder settings: which encoders, how quality and presets map onto each one, and output sizes.

Quality 0-100 maps linearly onto each encoder's constant-quality scale, as FaceFusion maps it, so the same
number means the same thing to users coming from there:

  libx264, libx265          crf = round(51 - 0.51 * quality)       (51 worst .. 0 lossless)
  libvpx-vp9                crf = round(63 - 0.63 * quality), b:v 0 (constant quality)
  h264_nvenc, hevc_nvenc    cq  = max(1, round(51 - 0.51 * quality)), rc vbr, b:v 0 (cq 0 would mean "auto")

Presets use x264's names everywhere (ultrafast .. veryslow); libvpx-vp9 and NVENC get their own equivalents.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import cast

import av
from av.video.codeccontext import VideoCodecContext

from slimfuse.errors import CodecUnavailableError, UnsupportedTypeError
from slimfuse.media.formats import CONTAINERS, ENCODERS

# libvpx-vp9: (deadline, cpu-used); realtime with a high cpu-used is the only way it gets near x264 veryfast.
VP9_PRESETS = {
    "ultrafast": ("realtime", 8), "superfast": ("realtime", 7), "veryfast": ("realtime", 6),
    "faster": ("realtime", 5), "fast": ("good", 4), "medium": ("good", 3), "slow": ("good", 2),
    "slower": ("good", 1), "veryslow": ("good", 0),
}
NVENC_PRESETS = {
    "ultrafast": "p1", "superfast": "p2", "veryfast": "p3", "faster": "p3", "fast": "p4", "medium": "p5",
    "slow": "p6", "slower": "p7", "veryslow": "p7",
}
# Encoders whose 4:2:0 output needs even dimensions (their cropping works in 2-pixel steps). VP9 takes odd sizes.
EVEN_ONLY = ("libx264", "libx265", "h264_nvenc", "hevc_nvenc")


def container_for(path: Path) -> str:
    """The FFmpeg muxer name for a video path, by extension."""
    fmt = CONTAINERS.get(path.suffix.lower())
    if fmt is None:
        raise UnsupportedTypeError(path, f"unsupported video type '{path.suffix}' (use {', '.join(CONTAINERS)})")
    return fmt


def crf_for(encoder: str, quality: int) -> int:
    """The constant-quality value (crf, or cq for NVENC) that `quality` 0-100 maps to; see the module doc."""
    if encoder == "libvpx-vp9":
        return round(63 - 0.63 * quality)
    value = round(51 - 0.51 * quality)
    return max(1, value) if encoder.endswith("_nvenc") else value


def encoder_options(encoder: str, quality: int, preset: str) -> dict[str, str]:
    """FFmpeg private options for `encoder` at this quality and preset."""
    crf = str(crf_for(encoder, quality))
    if encoder in ("libx264", "libx265"):
        options = {"crf": crf, "preset": preset}
        if encoder == "libx265":
            options["x265-params"] = "log-level=error"
        return options
    if encoder == "libvpx-vp9":
        deadline, cpu_used = VP9_PRESETS[preset]
        return {"crf": crf, "b": "0", "deadline": deadline, "cpu-used": str(cpu_used), "row-mt": "1"}
    return {"cq": crf, "rc": "vbr", "b": "0", "preset": NVENC_PRESETS[preset]}


def choose_encoder(path: Path, encoder: str | None) -> str:
    """The encoder for `path`: the one asked for, or the container's usual one; refuses a pair the container cannot
    hold (libx264 in .webm, for instance)."""
    fmt = container_for(path)
    chosen = encoder or ("libvpx-vp9" if fmt == "webm" else "libx264")
    allowed = {"webm": ("libvpx-vp9",), "avi": ("libx264", "h264_nvenc")}.get(fmt, ENCODERS)
    if chosen not in allowed:
        raise UnsupportedTypeError(path, f"a '{path.suffix}' file cannot hold {chosen} video "
                                         f"(use --output-video-encoder {' or '.join(allowed)})")
    return chosen


def check_encoder(encoder: str) -> None:
    """Raise CodecUnavailableError unless PyAV's FFmpeg has `encoder` and it opens here (NVENC needs a GPU and its
    driver, so being compiled in is not enough)."""
    if encoder not in av.codecs_available:
        raise CodecUnavailableError(None, f"encoder {encoder} is not in this FFmpeg build "
                                          f"(available: {', '.join(available_encoders())})")
    try:
        context = cast(VideoCodecContext, av.CodecContext.create(encoder, "w"))
        context.width, context.height = 256, 256
        context.pix_fmt = "yuv420p"
        context.time_base = Fraction(1, 25)
        context.options = {"x265-params": "log-level=error"} if encoder == "libx265" else {}
        context.open()
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise CodecUnavailableError(None, f"encoder {encoder} cannot be opened here ({exc}); "
                                          f"available: {', '.join(available_encoders(skip=encoder))}") from exc


def available_encoders(skip: str | None = None) -> list[str]:
    """The ENCODERS this FFmpeg build has compiled in (whether they open, NVENC aside, is not checked)."""
    return [name for name in ENCODERS if name in av.codecs_available and name != skip]


def output_size(width: int, height: int, scale: float, encoder: str) -> tuple[int, int]:
    """The encoded size: scaled, then made even where the encoder needs it (scaling picks the nearest even size;
    without scaling an odd side is padded by one replicated pixel, so no input pixel is resampled)."""
    if scale != 1.0:
        if encoder in EVEN_ONLY:
            return max(2, 2 * round(width * scale / 2)), max(2, 2 * round(height * scale / 2))
        return max(2, round(width * scale)), max(2, round(height * scale))
    if encoder in EVEN_ONLY:
        return width + width % 2, height + height % 2
    return width, height

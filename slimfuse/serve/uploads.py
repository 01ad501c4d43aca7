"""Uploaded files: streamed to disk under a server-made id, their size capped while reading, their type told
from their content (never from a client's name), images checked for decompression bombs before decoding, sounds
(the lip syncer's) read packet by packet with only their first packets decoded."""
from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import av
from PIL import Image, UnidentifiedImageError

from slimfuse.atomic import temporary_name
from slimfuse.errors import (ImageTooLargeError, InputCorruptError, InputEmptyError, SlimfuseError,
                             UnsupportedTypeError)
from slimfuse.media.video_probe import probe
from slimfuse.serve.store import JobStore, new_id

# The most pixels an uploaded image or video frame may have (a 50-megapixel photo; larger ones are refused before
# they are decoded: a small compressed file can unpack to gigabytes).
MAX_UPLOAD_PIXELS = 50_000_000
IMAGE_TYPES = {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp", "BMP": ".bmp"}
VIDEO_TYPES = {"mov,mp4,m4a,3gp,3g2,mj2": ".mp4", "matroska,webm": ".mkv", "avi": ".avi"}
AUDIO_TYPES = {"wav": ".wav", "flac": ".flac", "mp3": ".mp3", "ogg": ".ogg", "mov,mp4,m4a,3gp,3g2,mj2": ".m4a"}
"""Sound files (a container with an audio stream and no video stream) by FFmpeg's format name."""
CHECKED_PACKETS = 64
"""How many of a sound's first packets are decoded to know it decodes (its length is read from all its packets)."""
TAKEN = "JPEG, PNG, WebP, BMP; MP4, MOV, MKV, WebM, AVI; WAV, MP3, FLAC, M4A, OGG, Opus"


class TooLarge(Exception):
    """The upload passed the size cap while it was read."""


def display_name(name: str | None) -> str:
    """A client's file name reduced to a label (its last part, safe characters): shown, never used as a path."""
    base = re.split(r"[\\/]", name or "")[-1]
    cleaned = re.sub(r"[^A-Za-z0-9 ._()-]", "_", base).strip(" .")
    return cleaned[:100] or "upload"


async def receive(store: JobStore, user: str, chunks: AsyncIterator[bytes], name: str | None,
                  max_bytes: int) -> dict[str, Any]:
    """Write the upload to the data dir and describe it; raises TooLarge past `max_bytes` (nothing is kept) and
    slimfuse's own errors for files that are empty, corrupt, of another type or too large in pixels."""
    asset_id = new_id()
    partial = temporary_name(store.assets_dir / asset_id)
    size = 0
    try:
        with partial.open("wb") as handle:
            async for chunk in chunks:
                size += len(chunk)
                if size > max_bytes:
                    raise TooLarge()
                handle.write(chunk)
        if size == 0:
            raise InputEmptyError(display_name(name))
        kind, suffix = await asyncio.to_thread(sniff, partial, display_name(name))  # the API answers meanwhile
        final = store.assets_dir / f"{asset_id}{suffix}"
        os.replace(partial, final)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    try:
        details = await asyncio.to_thread(describe, final, kind, display_name(name))
    except BaseException:
        final.unlink(missing_ok=True)
        raise
    asset = {"id": asset_id, "user": user, "kind": kind, "suffix": suffix, "name": display_name(name), "bytes": size,
             "created": time.time(), **details}
    store.add_asset(asset)
    return asset


def sniff(path: Path, label: str) -> tuple[str, str]:
    """("image" | "video", suffix) from the file's content."""
    try:
        with Image.open(path) as image:
            fmt = image.format
        if fmt in IMAGE_TYPES:
            return "image", IMAGE_TYPES[fmt]
        raise UnsupportedTypeError(label, f"unsupported image type {fmt} (use JPEG, PNG, WebP or BMP)")
    except (UnidentifiedImageError, Image.DecompressionBombError):
        pass
    except OSError as exc:
        raise InputCorruptError(label, f"image is corrupt or truncated ({exc})") from None
    try:
        with av.open(str(path)) as container:
            fmt = container.format.name
            has_video, has_audio = bool(container.streams.video), bool(container.streams.audio)
    except (av.FFmpegError, OSError, ValueError):
        raise UnsupportedTypeError(label, f"not an image, video or sound this server takes ({TAKEN})") from None
    if has_video and fmt in VIDEO_TYPES:
        return "video", VIDEO_TYPES[fmt]
    if not has_video and has_audio and fmt in AUDIO_TYPES:
        return "audio", AUDIO_TYPES[fmt]
    streams = "video" if has_video else "audio" if has_audio else "no audio or video"
    raise UnsupportedTypeError(label, f"unsupported file type ({fmt}, {streams}; this server takes {TAKEN})")


def describe(path: Path, kind: str, label: str) -> dict[str, int | float | None]:
    """Size (and frames, or a sound's duration in seconds) of a stored upload, decoding it enough to know it is
    whole."""
    if kind == "audio":
        return {"width": None, "height": None, "frames": None, "duration": sound_seconds(path, label)}
    if kind == "video":
        try:
            info = probe(path)
        except SlimfuseError as exc:
            raise type(exc)(label, exc.detail) from None
        _check_pixels(info.width, info.height, label)
        return {"width": info.width, "height": info.height, "frames": info.frame_count, "duration": info.duration}
    try:
        with Image.open(path) as image:
            width, height = image.size
            _check_pixels(width, height, label)
            if image.format == "JPEG":
                image.draft("RGB", (max(1, width // 8), max(1, height // 8)))  # decode at 1/8: cheap, still whole
            image.load()
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(label, str(exc)) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise InputCorruptError(label, f"image is corrupt or truncated ({exc})") from None
    return {"width": width, "height": height, "frames": None, "duration": None}


def sound_seconds(path: Path, label: str) -> float:
    """How long a sound file's audio lasts (to its last packet's end), its first CHECKED_PACKETS packets decoded:
    InputCorruptError when they do not decode, InputEmptyError when it holds no sound."""
    end, decoded = 0.0, 0
    try:
        with av.open(str(path)) as container:
            stream = container.streams.audio[0]
            for packet in container.demux(stream):
                if packet.pts is None or packet.time_base is None:
                    continue
                end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
                if decoded < CHECKED_PACKETS:
                    decoded += len(stream.codec_context.decode(packet))
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise InputCorruptError(label, f"sound is corrupt or truncated ({exc})") from None
    if decoded == 0 or end <= 0:
        raise InputEmptyError(label, "holds no sound")
    return round(end, 3)


def _check_pixels(width: int, height: int, label: str) -> None:
    if width * height > MAX_UPLOAD_PIXELS:
        raise ImageTooLargeError(label, f"{width}x{height} is more than {MAX_UPLOAD_PIXELS // 1_000_000} megapixels "
                                        "(refused before decoding)")

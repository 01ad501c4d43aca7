"""The formats slimfuse writes, and how a video is encoded: plain words and a small settings class, read by the
option table and by the media code (no FFmpeg is loaded to know them)."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from slimfuse.errors import UsageError

ENCODERS = ("libx264", "libx265", "libvpx-vp9", "h264_nvenc", "hevc_nvenc")
AUDIO_ENCODERS = ("flac", "aac", "libmp3lame", "libopus", "libvorbis", "pcm_s16le", "pcm_s32le")
"""FaceFusion's audio encoders (--output-audio-encoder)."""
PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")
# Container (FFmpeg muxer name) by file extension, for both input and output.
CONTAINERS = {".mp4": "mp4", ".m4v": "mp4", ".mov": "mov", ".mkv": "matroska", ".webm": "webm", ".avi": "avi"}
IMAGE_SUFFIXES: dict[str, str] = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP", ".bmp": "BMP"}
ALPHA_SUFFIXES: tuple[str, ...] = (".png", ".webp", ".webm")
"""The outputs that hold an alpha channel (a transparent background): PNG and WebP images, VP9 video in WebM."""
"""Image files by extension, and their PIL format."""
AUDIO_SUFFIXES: tuple[str, ...] = (".flac", ".m4a", ".mp3", ".ogg", ".opus", ".wav")
"""Sound files by extension (FaceFusion's audio formats): a source path of these is the lip syncer's sound."""
FRAME_FORMATS = ("jpg", "png", "bmp")
"""The image formats disk mode (--temp-frame-format) writes its frames in."""


@dataclass(frozen=True)
class EncodeSettings:
    """How the output video is encoded (the `--output-video-*` options and `--skip-audio`).

    encoder: one of ENCODERS, or None for the container's usual one (libvpx-vp9 for .webm, else libx264).
    fps: a constant output rate (frames are duplicated or dropped by timestamp), or None to keep every input
      frame's own timestamp.
    scale: output size factor (0.5 halves both sides).
    threads: the encoder's threads (0: FFmpeg's choice; 1 under a tight --memory-budget: each thread holds frames).
    audio_encoder, audio_quality: re-encode the audio with this encoder, at this quality 0-100 (None: the input's
      audio is copied where the container can hold it, else re-encoded to the container's usual codec).
    audio_volume: the audio's volume in percent (below 100 it is re-encoded).
    audio_path: a file whose first audio stream the output carries instead of the input's (the lip syncer's
      sound), laid along the video's timeline (its start at the input's start) and cut where the video ends.
    alpha: frames come RGBA and keep their alpha: VP9 yuva420p in WebM (a transparent background).
    """

    encoder: str | None = None
    quality: int = 80
    preset: str = "veryfast"
    fps: Fraction | None = None
    scale: float = 1.0
    skip_audio: bool = False
    threads: int = 0
    audio_encoder: str | None = None
    audio_quality: int | None = None
    audio_volume: int = 100
    audio_path: Path | None = None
    alpha: bool = False

    @property
    def audio_reencoded(self) -> bool:
        """Whether the audio must be re-encoded whatever its codec: an encoder, a quality or a volume was asked for."""
        return self.audio_encoder is not None or self.audio_quality is not None or self.audio_volume != 100

    def __post_init__(self) -> None:
        if self.encoder is not None and self.encoder not in ENCODERS:
            raise UsageError(None, f"--output-video-encoder must be one of {', '.join(ENCODERS)}, not '{self.encoder}'")
        if not 0 <= self.quality <= 100:
            raise UsageError(None, f"--output-video-quality must be between 0 and 100, not {self.quality}")
        if self.preset not in PRESETS:
            raise UsageError(None, f"--output-video-preset must be one of {', '.join(PRESETS)}, not '{self.preset}'")
        if self.fps is not None and not 0 < self.fps <= 1000:
            raise UsageError(None, f"--output-video-fps must be above 0 and at most 1000, not {self.fps}")
        if not 0.05 <= self.scale <= 8:
            raise UsageError(None, f"--output-video-scale must be between 0.05 and 8, not {self.scale}")

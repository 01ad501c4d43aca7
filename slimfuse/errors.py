"""Error types the user sees: each has one documented exit code and a one-line message.

The command line catches `SlimfuseError`, prints `slimfuse: <message>` on stderr and exits with `exit_code`;
`--debug` adds the traceback. The README's exit-code table is generated from `EXIT_CODES`.
"""
from __future__ import annotations

import re
from pathlib import Path


class SlimfuseError(Exception):
    """Base class: an error with a documented exit code and a one-line message naming the file."""

    exit_code = 1
    problem = "failed"

    def __init__(self, path: Path | str | None = None, detail: str | None = None) -> None:
        self.path = None if path is None else str(path)
        self.detail = detail
        super().__init__(self.message)

    @property
    def message(self) -> str:
        text = self.detail or self.problem
        return f"{self.path}: {text}" if self.path else text


class UsageError(SlimfuseError):
    exit_code = 2
    problem = "invalid command-line usage"


class InputMissingError(SlimfuseError):
    exit_code = 3
    problem = "file not found"


class InputUnreadableError(SlimfuseError):
    exit_code = 4
    problem = "permission denied or not a readable file"


class InputEmptyError(SlimfuseError):
    exit_code = 5
    problem = "file is empty"


class InputCorruptError(SlimfuseError):
    exit_code = 6
    problem = "file is corrupt or truncated"


class UnsupportedTypeError(SlimfuseError):
    exit_code = 7
    problem = "unsupported file type"


class NoSourceFaceError(SlimfuseError):
    exit_code = 8
    problem = "no face found in the source image"


class NoTargetFaceError(SlimfuseError):
    exit_code = 9
    problem = "no face found in the target"


class OutputIsInputError(SlimfuseError):
    exit_code = 10
    problem = "output path is one of the inputs; refusing to overwrite an input"


class OutputDirMissingError(SlimfuseError):
    exit_code = 11
    problem = "output directory does not exist"


class NoSpaceError(SlimfuseError):
    exit_code = 12
    problem = "no space left on device"


class OutputUnwritableError(SlimfuseError):
    exit_code = 13
    problem = "cannot write the output here"


class ModelUnavailableError(SlimfuseError):
    """`tried`: each source and why it failed, for --debug and the run report (the message says what to do)."""

    exit_code = 14
    problem = "model could not be fetched from any source"

    def __init__(self, path: Path | str | None = None, detail: str | None = None, tried: tuple[str, ...] = ()) -> None:
        self.tried = tried
        super().__init__(path, detail)


class ModelCorruptError(SlimfuseError):
    exit_code = 15
    problem = "model file failed hash verification (its sha256, or its publisher's CRC32 of a download)"


class ImageTooLargeError(SlimfuseError):
    exit_code = 16
    problem = "image is too large"


class ProviderUnavailableError(SlimfuseError):
    exit_code = 17
    problem = "a requested execution provider is unavailable and --strict-provider forbids falling back"


class ModelInvalidError(SlimfuseError):
    exit_code = 18
    problem = "model file is not a usable model (not ONNX, truncated, or not the inputs its catalog entry says)"


class GateFailedError(SlimfuseError):
    exit_code = 19
    problem = "model variant did not pass its quality gate (it failed, or has not been gated yet)"


class OptimizeError(SlimfuseError):
    exit_code = 20
    problem = "model could not be optimised (its conversion or quantisation failed)"


class TorchMissingError(SlimfuseError):
    exit_code = 21
    problem = "the PyTorch extra is not installed: pip install 'slimfuse[torch]'"


class C2paSigningError(SlimfuseError):
    exit_code = 22
    problem = "the C2PA manifest could not be signed (the c2pa extra is missing, or the key or certificate was refused)"


class RayUnavailableError(SlimfuseError):
    exit_code = 23
    problem = "Ray is not usable: the ray extra is not installed (pip install 'slimfuse[ray]') or the cluster cannot be reached"



class VariantsNotReadyError(SlimfuseError):
    exit_code = 24
    problem = ("the job needs model variants that are not made yet (the server makes none itself: the operator runs "
               "the slimfuse optimize commands the message names)")

class NoVideoStreamError(SlimfuseError):
    exit_code = 30
    problem = "no video stream in the file (an audio-only file, or not a video)"


class NoFramesError(SlimfuseError):
    exit_code = 31
    problem = "the video stream holds no frames"


class CodecUnavailableError(SlimfuseError):
    exit_code = 32
    problem = "the video's codec, or the encoder asked for, is not available in this FFmpeg build"


class VideoDecodeStoppedError(InputCorruptError):
    """Decoding stopped partway; `frame_index` is the first frame that did not decode (the ones before it did)."""

    exit_code = 33
    problem = "video is corrupt or truncated: decoding stopped partway"

    def __init__(self, path: Path | str | None, frame_index: int, reason: str) -> None:
        self.frame_index = frame_index
        super().__init__(path, f"decoding stopped at frame {frame_index} ({reason})")


class LiveInputError(SlimfuseError):
    exit_code = 34
    problem = "the live input could not be opened, or it stopped or broke during the session"


class LiveOutputError(SlimfuseError):
    exit_code = 35
    problem = "the live output could not be opened, or it stopped taking frames during the session"


class LipSyncAudioError(SlimfuseError):
    exit_code = 36
    problem = ("the lip syncer has no usable sound: no audio stream, unreadable audio, audio shorter than the target "
               "video, or a target that is not a video")


class SystemMemoryLimitError(SlimfuseError):
    exit_code = 40
    problem = "ran out of memory under --system-memory-limit (no output was written)"


class MemoryBudgetError(SlimfuseError):
    exit_code = 41
    problem = "the job cannot fit in --memory-budget (nothing was done; the message says the smallest budget)"


class BatchItemsFailedError(SlimfuseError):
    exit_code = 50
    problem = "some items of the batch failed (the others are done; the summary names each failure)"


class InterruptedByUser(SlimfuseError):
    exit_code = 130
    problem = "interrupted"


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an interrupt so every clean-up that Ctrl-C runs (temp files, partial outputs) runs too."""


class TerminatedBySignal(SlimfuseError):
    exit_code = 143
    problem = "terminated (SIGTERM)"


PIPE_CLOSED_EXIT = 141
"""The reader of stdout went away (`slimfuse models list | head -2`): the command stops quietly, like the tools
that SIGPIPE ends (128 + 13)."""

EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "unexpected internal error (run again with --debug and report the traceback)",
    2: "invalid command-line usage",
    **{
        cls.exit_code: cls.problem
        for cls in (
            InputMissingError,
            InputUnreadableError,
            InputEmptyError,
            InputCorruptError,
            UnsupportedTypeError,
            NoSourceFaceError,
            NoTargetFaceError,
            OutputIsInputError,
            OutputDirMissingError,
            NoSpaceError,
            OutputUnwritableError,
            ModelUnavailableError,
            ModelCorruptError,
            ImageTooLargeError,
            ProviderUnavailableError,
            ModelInvalidError,
            GateFailedError,
            OptimizeError,
            TorchMissingError,
            C2paSigningError,
            RayUnavailableError,
            VariantsNotReadyError,
            NoVideoStreamError,
            NoFramesError,
            CodecUnavailableError,
            VideoDecodeStoppedError,
            LiveInputError,
            LiveOutputError,
            LipSyncAudioError,
            SystemMemoryLimitError,
            MemoryBudgetError,
            BatchItemsFailedError,
            InterruptedByUser,
            TerminatedBySignal,
        )
    },
    PIPE_CLOSED_EXIT: "stdout was closed by its reader (piped into head, say): the command stopped quietly",
}


# What allocation failures say when they do not arrive as MemoryError: ONNX Runtime (std::bad_alloc, its arena,
# pthread_create with ENOMEM), OpenCV, FFmpeg and Python's own threads.
_ALLOCATION_FAILURE = re.compile(
    r"bad_alloc|cannot allocate memory|failed to allocate|out of memory|insufficient memory|"
    r"can't start new thread|error code: 12\b", re.IGNORECASE)


def is_allocation_failure(error: BaseException) -> bool:
    """True when `error`, or an error it was raised from, is a failed allocation."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError) or _ALLOCATION_FAILURE.search(str(current)):
            return True
        current = current.__cause__ or current.__context__
    return False

"""Atomic output: a file is written under a temporary name in its destination folder and renamed when complete.

The temporary name, `.NAME.<pid>@<host>.<random>.part`, carries the writing process's id and machine, so a later
run on the same machine can tell the leftovers of a process that died (`kill -9`, a power cut) from the files of a
run still going, and remove only the former (`remove_stale`); files from other machines (a shared folder) are
left alone. Outputs get the user's normal file mode (0666 less the umask).
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from slimfuse.errors import NoSpaceError, OutputDirMissingError, OutputUnwritableError

Notify = Callable[[str], None]
PART_SUFFIX = ".part"
_PART = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)@(?P<host>[A-Za-z0-9-]+)\.[0-9a-f]{8}\.part$")


def host_tag() -> str:
    """This machine's name as it goes into temporary names (letters, digits and '-', at most 32)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32] or "host"


def temporary_name(destination: Path) -> Path:
    """`.NAME.<pid>@<host>.<random>.part` beside `destination`."""
    return destination.with_name(
        f".{destination.name}.{os.getpid()}@{host_tag()}.{secrets.token_hex(4)}{PART_SUFFIX}")


def check_destination(destination: Path) -> None:
    """What an output needs before any work: its folder exists and is writable, and the temporary name it is first
    written under (temporary_name) fits the file system's limit on names."""
    parent = destination.parent if str(destination.parent) else Path(".")
    if not parent.is_dir():
        raise OutputDirMissingError(destination, f"output directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputUnwritableError(destination, f"output directory {parent} is not writable")
    longest = os.pathconf(parent, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    needed = len(temporary_name(destination).name.encode())
    if needed > longest:
        raise OutputUnwritableError(destination, f"the file name is too long for this file system (its temporary "
                                    f"name takes {needed} bytes, at most {longest} fit)")


def write_error(path: Path, exc: BaseException,
                what: str = "the output") -> NoSpaceError | OutputDirMissingError | OutputUnwritableError:
    """The user's error for an OSError (or an FFmpeg error) while writing `path`: no space (exit 12), its folder
    gone (exit 11) or cannot write (exit 13)."""
    if getattr(exc, "errno", None) == errno.ENOSPC:
        return NoSpaceError(path)
    parent = path.parent if str(path.parent) else Path(".")
    if getattr(exc, "errno", None) == errno.ENOENT and not parent.is_dir():
        return OutputDirMissingError(path, f"output directory {parent} does not exist")
    return OutputUnwritableError(path, f"cannot write {what} ({getattr(exc, 'strerror', None) or exc})")


class AtomicFile:
    """A temporary file beside `destination`, created empty (mode 0666 less the umask) and renamed over
    `destination` by `commit()`, or removed by `discard()`.

    As a context manager, leaving the block normally commits and leaving it by any exception (KeyboardInterrupt
    included) discards. Writers that hand the file to a library by name (PyAV) use `.temp`; the others write
    through `open()`. `prepare`, when given, runs on the complete temporary file just before the rename (a C2PA
    signature), so the final name never holds a file without it. durable=False skips the fsyncs, for scratch files
    that a crash makes worthless anyway (disk mode's frames).
    """

    def __init__(self, destination: Path, prepare: Callable[[Path], None] | None = None, durable: bool = True) -> None:
        self.destination = Path(destination)
        self.prepare = prepare
        self.durable = durable
        self.temp = temporary_name(self.destination)
        self._done = False
        fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.close(fd)

    def open(self) -> BinaryIO:
        return self.temp.open("r+b")

    def commit(self, destination: Path | None = None) -> Path:
        """fsync the temporary file and rename it to `destination` (default: the one it was made for)."""
        final = Path(destination) if destination is not None else self.destination
        try:
            if self.prepare is not None:
                self.prepare(self.temp)
            if self.durable:
                _fsync(self.temp)
            os.replace(self.temp, final)
        except BaseException:
            self.discard()
            raise
        self._done = True
        if self.durable:
            _fsync_folder(final.parent)
        return final

    def discard(self) -> None:
        if self._done:
            return
        self._done = True
        self.temp.unlink(missing_ok=True)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


@contextmanager
def atomic_writer(destination: Path, prepare: Callable[[Path], None] | None = None,
                  durable: bool = True) -> Iterator[BinaryIO]:
    """`with atomic_writer(path) as handle: handle.write(...)`: the file appears whole under its name, or not at
    all (an error or Ctrl-C inside the block removes the temporary file)."""
    with AtomicFile(destination, prepare, durable) as atomic, atomic.open() as handle:
        yield handle


def write_bytes_atomic(destination: Path, data: bytes, durable: bool = True) -> None:
    with atomic_writer(destination, durable=durable) as handle:
        handle.write(data)


def owner_alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another user counts as alive: it is not ours to judge)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_owner(name: str) -> int | None:
    """The owning process id of a temporary name this module made on this machine, or None for any other name."""
    match = _PART.match(name)
    if match is None or match.group("host") != host_tag():
        return None
    return int(match.group("pid"))


def remove_stale(folder: Path, notify: Notify | None = None,
                 owner_of: Callable[[str], int | None] = stale_owner) -> list[Path]:
    """Remove the entries of `folder` that `owner_of` gives an owning process id (by their name) and whose owner
    is gone: by default this module's temporary files; disk mode passes its own folders. Returns them, each
    also reported through `notify`. Entries of live processes, and every other entry, are left alone."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        pid = owner_of(entry.name)
        if pid is None or owner_alive(pid) or entry.is_symlink():
            continue
        path = Path(entry.path)
        if entry.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        if path.exists():
            continue
        removed.append(path)
        if notify is not None:
            notify(f"removed {path}, left by process {pid}, which is gone")
    return removed


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    # The rename is durable only once the folder's entry is; some filesystems refuse to open a folder: skip those.
    try:
        fd = os.open(folder if str(folder) else ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

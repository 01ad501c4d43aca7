"""Helpers of the live tests: frames that carry their own number (a band of black and white blocks along the
bottom edge, far from the face, which survives x264), a PyAV MPEG-TS sender and reader on UDP loopback, and a free
UDP port with a check that someone listens on it."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable, Iterator
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from slimfuse.bench.clips import pan

BITS = 10
BLOCK = 32
BAND = 16


def coded(frames: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
    """Each frame with its number written into its bottom band."""
    for number, frame in enumerate(frames):
        out = frame.copy()
        for bit in range(BITS):
            out[-BAND:, bit * BLOCK:(bit + 1) * BLOCK] = 235 if number >> bit & 1 else 16
        yield out


def code_of(rgb: np.ndarray) -> int:
    band = rgb[-BAND + 4:-4].mean(axis=(0, 2))
    return sum(1 << bit for bit in range(BITS) if band[bit * BLOCK + 4:(bit + 1) * BLOCK - 4].mean() > 128)


def moving_face(photo: np.ndarray, count: int, size: tuple[int, int] = (640, 480)) -> list[np.ndarray]:
    return list(coded(pan(photo, size, count, face_px=150)))


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    """Whether a UDP socket is bound to this port (the kernel's table: /proc/net/udp)."""
    lines = Path("/proc/net/udp").read_text().splitlines()[1:]
    return any(line.split()[1].split(":")[1] == f"{port:04X}" for line in lines)


def wait_listening(port: int, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not listening(port):
        assert time.monotonic() < deadline, f"nothing listens on UDP port {port}"
        time.sleep(0.02)


def send(url: str, frames: Iterable[np.ndarray], fps: float, cut: bool = False) -> None:
    """Stream `frames` as MPEG-TS at `fps` in real time; cut: stop without the stream's end (a dropped link)."""
    container = av.open(url, mode="w", format="mpegts")
    stream = None
    started = time.perf_counter()
    for number, rgb in enumerate(frames):
        if stream is None:
            stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
            stream.height, stream.width = rgb.shape[:2]
            stream.pix_fmt = "yuv420p"
            stream.codec_context.options = {"preset": "ultrafast", "tune": "zerolatency", "crf": "18"}
            stream.codec_context.gop_size = round(fps)
        wait = started + number / fps - time.perf_counter()
        if wait > 0:
            time.sleep(wait)  # the camera's own clock
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        frame.pts = number
        container.mux(stream.encode(frame))
    if not cut and stream is not None:
        container.mux(stream.encode(None))
    container.close()


class Receiver:
    """Reads an MPEG-TS stream from a UDP port on a thread until it stays quiet for `quiet` seconds. FFmpeg's own
    reading thread fills a large queue, so a busy machine loses as few datagrams as UDP allows."""

    def __init__(self, port: int, quiet: float = 8.0) -> None:
        self.url = f"udp://127.0.0.1:{port}?fifo_size=1000000&overrun_nonfatal=1&buffer_size=4194304"
        self.frames: list[np.ndarray] = []
        self.error: BaseException | None = None
        self.quiet = quiet
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with av.open(self.url, options={"probesize": "200000", "analyzeduration": "200000"},
                         timeout=(60, self.quiet)) as container:
                for frame in container.decode(video=0):
                    self.frames.append(frame.to_ndarray(format="rgb24"))
        except av.error.FFmpegError as exc:
            if not self.frames:
                self.error = exc

    def join(self) -> list[np.ndarray]:
        self.thread.join(120)
        assert not self.thread.is_alive()
        return self.frames


def write_y4m(path: Path, frames: Iterable[np.ndarray], fps: int = 30) -> Path:
    """A fake camera's file for Chromium (--use-file-for-fake-video-capture): a header, then I420 frames."""
    import cv2

    with path.open("wb") as out:
        for number, rgb in enumerate(frames):
            height, width = rgb.shape[:2]
            if number == 0:
                out.write(f"YUV4MPEG2 W{width} H{height} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
            out.write(b"FRAME\n" + cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV_I420).tobytes())
    return path


class Frames:
    """A live output that keeps what it is given."""

    spec = "frames"

    def __init__(self) -> None:
        self.frames: list[np.ndarray] = []

    def write(self, rgb: np.ndarray, seconds: float) -> None:
        self.frames.append(rgb)

    def close(self) -> None:
        pass

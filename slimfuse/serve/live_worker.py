"""A live session's own process: `python -m slimfuse.serve.live_worker REQUEST_JSON`. It keeps one Swapper and
answers each frame on stdin with its swapped frame on stdout, in order, tracking kept across frames: the API
process relays a browser's WebSocket to it and never loads a model itself.

A frame on either pipe is a 4-byte big-endian length, then an 8-byte stamp the client chose (carried through
untouched, so the page can time camera-to-screen), then a JPEG. A control (the page's swap on/off) is CONTROL
instead of the stamp, then JSON; it gets no answer.
"""
from __future__ import annotations

import json
import struct
import sys
from collections import deque
from collections.abc import Iterator
from typing import BinaryIO

import cv2
import numpy as np

from slimfuse import Swapper

HEADER = struct.Struct(">I")
STAMP = 8
CONTROL = b"\xff" * STAMP
JPEG_QUALITY = 80


def read_message(pipe: BinaryIO) -> bytes | None:
    head = pipe.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    return pipe.read(HEADER.unpack(head)[0])


def write_message(pipe: BinaryIO, payload: bytes) -> None:
    pipe.write(HEADER.pack(len(payload)) + payload)
    pipe.flush()


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    stamps: deque[bytes] = deque()

    controls = {"swap": True}

    def frames() -> Iterator[np.ndarray]:
        while (message := read_message(sys.stdin.buffer)) is not None:
            if message[:STAMP] == CONTROL:
                controls.update({key: bool(value) for key, value in json.loads(message[STAMP:]).items()
                                 if key in controls})
                continue
            if not controls["swap"]:  # the camera as it is, answered at once
                write_message(sys.stdout.buffer, message)
                continue
            bgr = cv2.imdecode(np.frombuffer(message[STAMP:], np.uint8), cv2.IMREAD_COLOR)
            if bgr is None:
                continue  # not a JPEG: nothing to answer
            stamps.append(message[:STAMP])
            yield cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)

    with Swapper(request["sources"], **request["options"]) as swapper:
        write_message(sys.stdout.buffer, b"ready")
        for rgb in swapper.stream(frames()):
            ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
            write_message(sys.stdout.buffer, stamps.popleft() + jpeg.tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

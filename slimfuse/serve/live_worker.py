"""A live session's own process: `python -m slimfuse.serve.live_worker REQUEST_JSON`. It keeps one run and answers
each frame on stdin with its swapped frame on stdout, in order, tracking kept across frames: the API process
relays a browser's WebSocket to it and never loads a model itself.

A frame on either pipe is a 4-byte big-endian length, then an 8-byte stamp the client chose (carried through
untouched, so the page can time camera-to-screen), then a JPEG. A message for the other side is CONTROL instead of
the stamp, then JSON. In: the page's controls, as the API process checked them (`swap`, `selector_mode`,
`keep_mouth`, `enhancer`, `face_editor` (the editor's values by name): what live/controls.py applies;
`source_path` and `source_name`: a photo of another person, an upload of the page's own user that the API process
found); they get no answer of their own. Out: first
`{"ready": true, ...}` with what the run can change, then each line the session says (a change made, one it
cannot make), `{"notice": ..., "level": ...}`, before the answer to the next frame.
"""
from __future__ import annotations

import json
import logging
import struct
import sys
from pathlib import Path
from typing import Any, BinaryIO

import cv2
import numpy as np

from slimfuse.config import RunConfig
from slimfuse.errors import SlimfuseError
from slimfuse.live.controls import Controls, LiveLoop
from slimfuse.pipeline.run import SourceImage, build_run

HEADER = struct.Struct(">I")
STAMP = 8
CONTROL = b"\xff" * STAMP
JPEG_QUALITY = 80
FPS = 30.0
"""The frames' clock for the tracker: the page sends about this many a second at most."""
MAX_FACES = 8
"""Source faces a session keeps at most (the first one and those sent from the page): each is kept prepared."""


def read_message(pipe: BinaryIO) -> bytes | None:
    head = pipe.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    return pipe.read(HEADER.unpack(head)[0])


def write_message(pipe: BinaryIO, payload: bytes) -> None:
    pipe.write(HEADER.pack(len(payload)) + payload)
    pipe.flush()


def control_message(data: dict[str, Any]) -> bytes:
    return CONTROL + json.dumps(data).encode()


class Notices(logging.Handler):
    """The session's lines (slimfuse's log), kept to go to the page before the next frame's answer."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.pending: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.pending.append({"notice": record.getMessage(), "level": record.levelname.lower()})

    def send(self, pipe: BinaryIO) -> None:
        for notice in self.pending:
            write_message(pipe, control_message(notice))
        self.pending.clear()


def apply_control(data: dict[str, Any], loop: LiveLoop) -> None:
    """One control from the page (checked by the API process) on the session's Controls."""
    controls = loop.controls
    if isinstance(data.get("swap"), bool):
        controls.swap = data["swap"]
    if data.get("selector_mode") in ("one", "many"):
        controls.selector_mode = data["selector_mode"]
    if isinstance(data.get("keep_mouth"), bool):
        controls.keep_mouth = data["keep_mouth"]
    if isinstance(data.get("enhancer"), bool):
        controls.enhancer = data["enhancer"]
    if isinstance(data.get("face_editor"), dict):
        controls.face_editor = {**controls.face_editor, **{str(name): float(value)
                                                           for name, value in data["face_editor"].items()}}
    if isinstance(data.get("source_path"), str) and controls.faces >= MAX_FACES:
        logging.getLogger(__name__).warning(f"a session takes at most {MAX_FACES} source faces; "
                                            "start a new one for more")
    elif isinstance(data.get("source_path"), str):
        try:
            photo = SourceImage.read(Path(data["source_path"]))
        except SlimfuseError as error:
            logging.getLogger(__name__).warning(error.message)
        else:
            loop.add_face([SourceImage(str(data.get("source_name") or photo.label), photo.rgb)])
    loop.apply()


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    notices = Notices()
    log = logging.getLogger("slimfuse")
    log.addHandler(notices)
    log.setLevel(logging.INFO)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    run = build_run(RunConfig.from_options([Path(source) for source in request["sources"]], **request["options"]))
    try:
        loop = LiveLoop(run, Controls())
        notices.pending.clear()  # what loading said is for the server's log, not the page
        can = loop.capabilities
        write_message(stdout, control_message({"ready": True, "keep_mouth": loop.controls.keep_mouth if
                                               can.keep_mouth else None, "enhancer": can.enhancer,
                                               "face_editor": can.face_editor,
                                               "selector_mode": loop.controls.selector_mode}))
        frames = 0
        while (message := read_message(stdin)) is not None:
            if message[:STAMP] == CONTROL:
                apply_control(json.loads(message[STAMP:]), loop)
                continue
            answer = message  # with swap off, the camera as it is, answered at once
            if loop.controls.swap:
                bgr = cv2.imdecode(np.frombuffer(message[STAMP:], np.uint8), cv2.IMREAD_COLOR)
                if bgr is None:
                    continue  # not a JPEG: nothing to answer
                rgb = loop.process(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), frames / FPS)
                frames += 1
                _, jpeg = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
                                       [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
                answer = message[:STAMP] + jpeg.tobytes()
            notices.send(stdout)
            write_message(stdout, answer)
    finally:
        run.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

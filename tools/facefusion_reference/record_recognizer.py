"""Reference outputs of FaceFusion 3.8.1's face recognizer (arcface_w600k_r50, on its parity stand-in).

For the target face (the astronaut) and the source face (Grace Hopper), with the fixed five points of geometry.json,
FaceFusion's `calculate_face_embedding` runs through a session that records what it is fed. `FACE.npz` holds:
- `crop`: the face aligned to arcface_112_v2 at 112 px (`warp_face_by_face_landmark_5`; RGB uint8);
- `input`: the tensor fed to the model ([1, 3, 112, 112]);
- `embedding`, `embedding_norm`: what FaceFusion returns (the raw embedding, and it divided by its length).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import common
from record_detectors import RecordingSession

AREA = "recognizer"
MODEL = "arcface_w600k_r50"


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import face_recognizer
    from facefusion.face_helper import warp_face_by_face_landmark_5

    options = face_recognizer.get_model_options()
    recording = RecordingSession(common.session(MODEL, models))
    face_recognizer.get_inference_pool = lambda: {"face_recognizer": recording}
    written = []
    for face, frame in (("target", inputs.target_bgr), ("source", inputs.source_bgr)):
        five = np.asarray(inputs.geometry[face]["five"], dtype=np.float64)
        embedding, embedding_norm = face_recognizer.calculate_face_embedding(frame, five)
        crop, _ = warp_face_by_face_landmark_5(frame, five, options["template"], options["size"])
        tensor = recording.feeds["input"]
        expected = (crop / 127.5 - 1)[:, :, ::-1].transpose(2, 0, 1).astype(np.float32)[None]
        if not np.array_equal(tensor, expected) or not np.array_equal(embedding, recording.outputs[0].ravel()):
            raise SystemExit(f"{face}: the crop and the model's output do not add up to calculate_face_embedding")
        written.append(common.save(AREA, face, {"crop": common.rgb(crop), "input": tensor, "embedding": embedding,
                                                "embedding_norm": embedding_norm}))
    return written

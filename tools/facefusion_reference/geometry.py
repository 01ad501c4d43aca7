"""Writes tests/parity/geometry.json (run in slimfuse's venv): the fixed face geometry both programs are given.

The target photo is scikit-image's astronaut (512 x 512, packaged), the source Grace Hopper's portrait; slimfuse's
own detector and FaceMesh find each face once, and the box, the five points (slimfuse's template order) and 68 points
(FaceMesh vertices in the iBUG-68 layout, slimfuse.faces.landmarks_68, nudged so that FaceFusion's five-from-68
gives the same five points) are written down. The parity tests and the recorder read this file; neither detects anything.

    .venv/bin/python tools/facefusion_reference/geometry.py
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import cv2
import numpy as np

from slimfuse.faces.align import five_points
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.samples import sample_path

OUT = Path(__file__).resolve().parents[2] / "tests" / "parity" / "geometry.json"


def nudged_68(mesh: np.ndarray, five: np.ndarray) -> np.ndarray:
    """slimfuse's 68 points, each eye's six moved so that their centre is the five points' eye (the mean of the
    mesh's 16-point ring), as FaceFusion takes its five points from the 68 (the nose tip and mouth corners are the
    five points' already)."""
    points = landmarks_68(mesh)
    points[36:42] += five[0] - points[36:42].mean(0)
    points[42:48] += five[1] - points[42:48].mean(0)
    return points


def main() -> None:
    analyser = FaceAnalyser(ModelPool(Store()))
    geometry = {}
    for key, name in (("target", "astronaut"), ("source", "grace_hopper")):
        path = sample_path(name)
        image = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
        faces = analyser.faces(image)
        if len(faces) != 1:
            raise SystemExit(f"expected one face in {name}, found {len(faces)}")
        five = five_points(faces[0].landmarks)
        geometry[key] = {
            "photo": name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "box": np.round(np.asarray(faces[0].box, dtype=np.float64), 3).tolist(),
            "five": np.round(five, 3).tolist(),
            "landmark_68": np.round(nudged_68(faces[0].landmarks, five), 3).tolist(),
        }
    OUT.write_text(json.dumps(geometry) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

"""What every recorder shares: FaceFusion on the path, the fixed inputs, the stand-in sessions, the output files.

Runs in FaceFusion's venv (numpy, onnx, onnxruntime, opencv); imports nothing of slimfuse. FaceFusion works on BGR
frames, slimfuse on RGB: every image written here is RGB uint8, every mask float in [0, 1] stored as uint8 x 255.
"""
from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[2]
PARITY = REPO / "tests" / "parity"
REFERENCE = PARITY / "reference"
FACEFUSION_COMMIT = "33cc6b40"
sys.path.insert(0, str(PARITY))

import standins  # noqa: E402  (tests/parity/standins.py: numpy and onnx only)


def use_facefusion(checkout: Path) -> None:
    """Put FaceFusion's checkout first on the path (its modules are imported by name: `facefusion.*`)."""
    if not (checkout / "facefusion" / "face_helper.py").is_file():
        raise SystemExit(f"{checkout}: not a FaceFusion checkout (no facefusion/face_helper.py)")
    sys.path.insert(0, str(checkout))
    from facefusion import state_manager

    state_manager.init_item("download_providers", [])  # model tables name no URL: nothing is pinged or fetched


@dataclass(frozen=True)
class Inputs:
    target_bgr: np.ndarray
    source_bgr: np.ndarray
    geometry: dict[str, Any]
    target_embedding: np.ndarray
    source_embedding: np.ndarray
    """Raw (unnormalised, ArcFace-scale) identity vectors given to both programs, so that each swapper's source
    recipe is compared without the recognizer (compared on its own)."""


def embedding(seed: int) -> np.ndarray:
    return (np.random.Generator(np.random.PCG64(seed)).standard_normal(512) * 0.9).astype(np.float32)


def photo(path: Path, sha256: str) -> np.ndarray:
    """The packaged photo at `path` (`python -m slimfuse.samples NAME` prints it), checked against geometry.json."""
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise SystemExit(f"{path}: not the photo geometry.json was made from (sha256 differs)")
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def inputs(target: Path, source: Path) -> Inputs:
    geometry = json.loads((PARITY / "geometry.json").read_text())
    return Inputs(photo(target, geometry["target"]["sha256"]), photo(source, geometry["source"]["sha256"]),
                  geometry, embedding(1), embedding(2))


def facefusion_face(geometry: Mapping[str, Any], raw_embedding: np.ndarray) -> Any:
    """A FaceFusion `Face` with the fixed geometry and identity."""
    from facefusion.types import Face

    five = np.asarray(geometry["five"], dtype=np.float64)
    points_68 = np.asarray(geometry["landmark_68"], dtype=np.float64)
    landmarks = {"5": five, "5/68": five, "68": points_68, "68/5": points_68}
    return Face(origin="parity", bounding_box=np.asarray(geometry["box"]), score_set={"detector": 1.0},
                landmark_set=landmarks, angle=0, embedding=raw_embedding,
                embedding_norm=raw_embedding / np.linalg.norm(raw_embedding), age=range(20, 30), gender="female",
                race="white")


def session(name: str, folder: Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(str(standins.write(name, folder)), options,
                                        providers=["CPUExecutionProvider"])


def use_standins(core: Any, options: Mapping[str, Any], models: Path, sources: Mapping[str, str]) -> dict[str, Any]:
    """Points a FaceFusion processor module (`core`) at the parity stand-ins: its model options (a copy of
    `options`, its sources' paths replaced) and its inference pool, key -> stand-in name as FaceFusion keys them."""
    pointed = {**options, "sources": {key: {"path": str(standins.write(name, models))} for key, name in sources.items()}}
    pool = {key: session(name, models) for key, name in sources.items()}
    core.get_model_options = lambda: pointed
    core.get_inference_pool = lambda: pool
    return pointed


def rgb(bgr: np.ndarray) -> np.ndarray:
    """A FaceFusion image (BGR, uint8 or float 0..255) as RGB uint8, rounded."""
    return np.clip(np.rint(np.asarray(bgr, dtype=np.float64)), 0, 255).astype(np.uint8)[..., ::-1].copy()


def mask8(mask: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(np.asarray(mask, dtype=np.float64) * 255), 0, 255).astype(np.uint8)


def save(area: str, name: str, arrays: Mapping[str, np.ndarray]) -> Path:
    folder = REFERENCE / area
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.npz"
    np.savez_compressed(path, facefusion_commit=np.array(FACEFUSION_COMMIT), **arrays)
    return path

"""RunConfig: every setting of a run, built once from the command line; the one place defaults live."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from slimfuse.faces.detect import DetectorName
from slimfuse.faces.select import SelectorMode

BlendMode = Literal["feather", "poisson"]


@dataclass(frozen=True)
class RunConfig:
    sources: tuple[Path, ...]
    target: Path
    output: Path
    face_swapper_model: Literal["mesh"] = "mesh"
    face_selector_mode: SelectorMode = "one"
    reference_face_image: Path | None = None
    reference_face_position: int = 0
    reference_face_distance: float = 0.6
    face_detector_model: DetectorName = "auto"
    face_detector_score: float | None = None
    face_detector_size: int = 640
    target_face_size: int = 512
    keep_mouth: bool = True
    keep_eyes: bool = False
    blend: BlendMode = "feather"
    execution_thread_count: int = 0
    models_dir: Path | None = None
    home: Path | None = None
    # Video
    detect_interval: int = 5
    reuse_threshold: float | None = None
    """None: on (2.0) for neural swappers, off for the mesh swapper."""
    reuse_max_frames: int = 3

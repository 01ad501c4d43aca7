"""Real faces for calibrating and gating model variants: the packaged photos, augmented.

Two disjoint sets of augmentations (scale, roll, brightness, blur, mirror) of the public-domain portraits that
ship in matplotlib and scikit-image: `gate` for the quality gate and `calibrate` for static quantisation, so a
quantised variant is not judged on the very pictures it was calibrated on. Each image's face (box, keypoints,
468-point mesh) comes from the embedded original models (BlazeFace and FaceMesh), never from a variant.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np
from PIL import Image

from slimfuse.faces.types import Face
from slimfuse.samples import ASTRONAUT_FACE, GRACE_HOPPER_FACE, sample_path

Split = Literal["gate", "calibrate"]
PHOTOS: dict[str, tuple[int, int, int, int]] = {"grace_hopper": GRACE_HOPPER_FACE, "astronaut": ASTRONAUT_FACE}


@dataclass(frozen=True)
class Augment:
    scale: float = 1.0
    """Zoom about the face centre (below 1 the face gets smaller)."""
    roll: float = 0.0
    """Degrees, counter-clockwise, about the face centre."""
    brightness: float = 1.0
    blur: float = 0.0
    """Gaussian sigma in pixels."""
    mirror: bool = False

    @property
    def label(self) -> str:
        parts = [f"scale {self.scale:g}" if self.scale != 1 else "", f"roll {self.roll:g}" if self.roll else "",
                 f"brightness {self.brightness:g}" if self.brightness != 1 else "",
                 f"blur {self.blur:g}" if self.blur else "", "mirror" if self.mirror else ""]
        return ", ".join(part for part in parts if part) or "as is"


AUGMENTS: dict[Split, tuple[Augment, ...]] = {
    "gate": (
        Augment(), Augment(scale=0.6), Augment(scale=1.5), Augment(roll=-25), Augment(roll=25),
        Augment(brightness=0.6), Augment(brightness=1.4), Augment(blur=2.0),
        Augment(scale=0.8, roll=15, brightness=0.8, blur=1.0),
    ),
    "calibrate": (
        Augment(mirror=True), Augment(scale=0.75, roll=-10), Augment(scale=1.25, roll=10),
        Augment(brightness=0.8, blur=1.0), Augment(brightness=1.2, mirror=True), Augment(scale=1.1, roll=20),
        Augment(scale=0.9, blur=1.5), Augment(scale=0.7, roll=-20, brightness=1.1),
    ),
}


@dataclass(frozen=True)
class CalibrationImage:
    label: str
    image: np.ndarray
    """RGB uint8."""
    face: Face | None
    """The largest face with its mesh, by the original models; None when they found none."""


def augment(image: np.ndarray, centre: tuple[float, float], change: Augment) -> np.ndarray:
    """`image` zoomed and rolled about `centre`, brightened, blurred and mirrored; same size, border replicated."""
    height, width = image.shape[:2]
    out = image
    if change.scale != 1.0 or change.roll:
        matrix = cv2.getRotationMatrix2D(centre, change.roll, change.scale)
        out = cv2.warpAffine(out, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    if change.brightness != 1.0:
        out = np.clip(out.astype(np.float32) * np.float32(change.brightness), 0, 255).astype(np.uint8)
    if change.blur:
        out = cv2.GaussianBlur(out, (0, 0), change.blur)
    if change.mirror:
        out = out[:, ::-1]
    return np.ascontiguousarray(out)


def photos() -> dict[str, np.ndarray]:
    return {name: np.asarray(Image.open(sample_path(name)).convert("RGB")) for name in PHOTOS}


def images(split: Split) -> list[tuple[str, np.ndarray]]:
    """The augmented photos of `split`, labelled."""
    found = []
    for name, photo in photos().items():
        box = PHOTOS[name]
        centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        for change in AUGMENTS[split]:
            found.append((f"{name} ({change.label})", augment(photo, centre, change)))
    return found


def calibration_images(analyse: object, split: Split) -> list[CalibrationImage]:
    """The augmented photos of `split` with their largest face, found by `analyse` (a FaceAnalyser over the
    original models)."""
    result = []
    for label, image in images(split):
        faces = analyse.faces(image)  # type: ignore[attr-defined]
        result.append(CalibrationImage(label, image, faces[0] if faces else None))
    return result

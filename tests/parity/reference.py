"""Reading FaceFusion 3.8.1's recorded outputs (tests/parity/reference/AREA/NAME.npz, written by
tools/facefusion_reference/record.py) and the agreement the parity tests require of slimfuse's.

Agreement (the parity issue's): images and masks at >= 45 dB PSNR or at most 2 grey levels apart anywhere;
embeddings at cosine >= 0.9999; boxes and points within 0.5 px. SLIMFUSE_PARITY_PROVIDER=cuda runs slimfuse's side
on the GPU (`slimfuse bench gpu` does): the references stay the CPU's, and images need 40 dB there.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from neural_models import isolated_store
from parity import standins
from slimfuse.models.pool import ModelPool
from slimfuse.models.runtime import SessionSettings
from slimfuse.models.store import Store

FOLDER = Path(__file__).resolve().parent
PROVIDER = os.environ.get("SLIMFUSE_PARITY_PROVIDER", "cpu")
MIN_PSNR = 45.0 if PROVIDER == "cpu" else 40.0
MAX_LEVELS = 2.0
MIN_COSINE = 0.9999
MAX_PIXELS = 0.5
FACEFUSION_COMMIT = "33cc6b40"


def session_settings() -> SessionSettings:
    """The sessions of slimfuse's side: on SLIMFUSE_PARITY_PROVIDER, and an error if it cannot run there."""
    return SessionSettings(providers=(PROVIDER,), strict_provider=PROVIDER != "cpu")


def standin_pool(root: Path, store: Store, names: Iterable[str]) -> ModelPool:
    """The parity stand-ins `names` placed in ROOT/placed as a user places model files (files already there are
    kept), loaded through a store of their own (ROOT/home) on SLIMFUSE_PARITY_PROVIDER."""
    for name in names:
        standins.write(name, root / "placed")
    return ModelPool(isolated_store(root / "home", store, root / "placed"), session_settings())


@cache
def recorded(area: str, name: str) -> dict[str, np.ndarray]:
    path = FOLDER / "reference" / area / f"{name}.npz"
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


@cache
def geometry() -> dict[str, Any]:
    return json.loads((FOLDER / "geometry.json").read_text())


def psnr(actual: np.ndarray, expected: np.ndarray) -> float:
    """PSNR in dB on the 0..255 scale (masks in 0..1 are scaled up); inf when equal."""
    a, e = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"shapes differ: {a.shape} against FaceFusion's {e.shape}")
    mse = float(np.mean((a - e) ** 2))
    return float("inf") if mse == 0 else 10.0 * np.log10(255.0 ** 2 / mse)


def assert_image_close(actual: np.ndarray, expected: np.ndarray, what: str) -> float:
    """Passes at >= MIN_PSNR or when no value is more than MAX_LEVELS apart; returns the PSNR."""
    value = psnr(actual, expected)
    largest = float(np.abs(np.asarray(actual, np.float64) - np.asarray(expected, np.float64)).max())
    assert value >= MIN_PSNR or largest <= MAX_LEVELS, (
        f"{what}: {value:.1f} dB against FaceFusion's (need {MIN_PSNR}), largest difference {largest:.1f} levels")
    return value


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def assert_vector_close(actual: np.ndarray, expected: np.ndarray, what: str, scale: bool = True) -> None:
    """Cosine >= MIN_COSINE; with `scale` the norms agree too (within 0.1%)."""
    value = cosine(actual, expected)
    assert value >= MIN_COSINE, f"{what}: cosine {value:.6f} with FaceFusion's (need {MIN_COSINE})"
    if scale:
        ratio = float(np.linalg.norm(actual) / np.linalg.norm(expected))
        assert abs(ratio - 1.0) <= 1e-3, f"{what}: norm {ratio:.4f} x FaceFusion's"


def mask_float(recorded_mask: np.ndarray) -> np.ndarray:
    """A recorded mask (uint8 x 255) as float in [0, 1]."""
    return recorded_mask.astype(np.float32) / 255.0


@dataclass(frozen=True)
class Row:
    area: str
    model: str
    stage: str
    figure: str
    score: float
    """For the summary's worst case: dB for images (inf when identical), cosine x 100 for vectors."""


@dataclass
class Figures:
    """The agreement measured, one row per comparison, in the order the tests ran."""

    rows: list[Row] = field(default_factory=list)

    def image(self, area: str, model: str, stage: str, actual: np.ndarray, expected: np.ndarray) -> None:
        """assert_image_close, and the row."""
        value = assert_image_close(actual, expected, f"{model} {stage}")
        largest = float(np.abs(np.asarray(actual, np.float64) - np.asarray(expected, np.float64)).max())
        plural = "" if largest == 1 else "s"
        figure = "identical" if value == float("inf") else f"{value:.1f} dB (max {largest:.0f} level{plural})"
        self.rows.append(Row(area, model, stage, figure, value))

    def vector(self, area: str, model: str, stage: str, actual: np.ndarray, expected: np.ndarray,
               scale: bool = True) -> None:
        """assert_vector_close, and the row."""
        assert_vector_close(actual, expected, f"{model} {stage}", scale)
        value = cosine(actual, expected)
        norm = float(np.linalg.norm(actual) / np.linalg.norm(expected))
        self.rows.append(Row(area, model, stage, f"cosine {value:.6f}, norm x{norm:.4f}", 100 * value))

    def within(self, area: str, model: str, stage: str, actual: np.ndarray, expected: np.ndarray, limit: float,
               unit: str) -> None:
        """Every value within `limit` of FaceFusion's (boxes and points: MAX_PIXELS), and the row (its score 100 at
        no difference, 0 at the limit)."""
        a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
        assert a.shape == e.shape, f"{model} {stage}: shape {a.shape} against FaceFusion's {e.shape}"
        largest = float(np.abs(a - e).max()) if a.size else 0.0
        assert largest <= limit, f"{model} {stage}: {largest:.4g} {unit} from FaceFusion's (at most {limit})"
        self.rows.append(Row(area, model, stage, f"largest difference {largest:.2g} {unit} ({a.size} values)",
                             100 * (1 - largest / limit)))

    def note(self, area: str, model: str, stage: str, figure: str) -> None:
        """A row that is no agreement claim (a stage where slimfuse differs on purpose): left out of the summary."""
        self.rows.append(Row(area, model, stage, figure, float("nan")))

    def markdown(self) -> str:
        """The summary (per model: the stages compared and the worst agreement) and every comparison."""
        models: dict[tuple[str, str], list[Row]] = {}
        for row in self.rows:
            models.setdefault((row.area, row.model), []).append(row)
        lines = ["## Summary", "", "| area | model | comparisons | worst (stage) | FaceFusion |",
                 "| --- | --- | --- | --- | --- |"]
        for (area, model), rows in models.items():
            claims = [row for row in rows if not np.isnan(row.score)]
            worst = min(claims, key=lambda row: row.score) if claims else None
            shown = f"{worst.figure} ({worst.stage})" if worst else "-"
            lines.append(f"| {area} | {model} | {len(claims)} | {shown} | {FACEFUSION_COMMIT} |")
        lines += ["", "## Every comparison", "", "| area | model | stage | against FaceFusion |", "| --- | --- | --- | --- |"]
        lines += [f"| {row.area} | {row.model} | {row.stage} | {row.figure} |" for row in self.rows]
        return "\n".join(lines) + "\n"


def paste_box(frame: np.ndarray, box: np.ndarray) -> np.ndarray:
    """The part of `frame` inside FaceFusion's paste box (x1, y1, x2, y2)."""
    x1, y1, x2, y2 = (int(value) for value in box)
    return frame[y1:y2, x1:x2]


def compare_where_masks_whole(figures: Figures, area: str, model: str, stage: str, before: np.ndarray,
                              frame: np.ndarray, reference: dict[str, np.ndarray], expected: np.ndarray) -> None:
    """A face stage's chained result (`frame`, pasted into `before`) against FaceFusion's `expected` paste box, where
    FaceFusion's box mask is whole (slimfuse's mask is too; nearer the crop's edge they differ by design); outside
    the paste box the frame is unchanged."""
    x1, y1, x2, y2 = (int(value) for value in reference["paste_box"])
    box_from_crop = np.vstack([reference["matrix"], [0, 0, 1]]) @ np.array([[1, 0, x1], [0, 1, y1], [0, 0, 1]])
    whole = (reference["box_mask"] == 255).astype(np.float32)
    inside = cv2.warpAffine(whole, box_from_crop[:2], (x2 - x1, y2 - y1),
                            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP) == 1
    assert inside.mean() > 0.2
    figures.image(area, model, stage, paste_box(frame, reference["paste_box"])[inside], expected[inside])
    outside = np.ones(before.shape[:2], dtype=bool)
    outside[y1:y2, x1:x2] = False
    assert np.array_equal(frame[outside], before[outside])

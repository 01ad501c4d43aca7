"""The ArcFace recognizer (arcface_w600k_r50) against FaceFusion 3.8.1's recorded outputs
(tests/parity/reference/recognizer), on the parity stand-in loaded through slimfuse's store.

For the target face (the astronaut) and the source face (Grace Hopper), from the fixed five points: the face aligned
to arcface_112_v2 at 112 px, the tensor fed to the model, the embedding of FaceFusion's crop and its normalised form,
then slimfuse's own crop and embedding chained. What differs on purpose: Grace Hopper's face is shrunk more than 2x
to 112 px, which slimfuse area-averages and FaceFusion warps bilinearly (aliasing); there the crop is compared as a
bilinear warp of slimfuse's alignment, and the chained embedding is a figure with a looser bound.
"""
from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import pytest

from parity.reference import cosine, Figures, geometry, psnr, recorded, standin_pool
from slimfuse.faces.align import align_matrix
from slimfuse.faces.recognize import ArcFaceRecognizer, build_recognizer, normalise
from slimfuse.models.neural.recognizers import ARCFACE
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store

AREA = "recognizer"
PHOTOS = {"target": "astronaut", "source": "grace_hopper"}
SHRUNK = ("source",)
"""Faces shrunk more than 2x to the crop (slimfuse area-averages them)."""


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("parity_recognizer")
    return standin_pool(root, store, (ARCFACE,))


@pytest.fixture(scope="module")
def recognizer(parity_pool: ModelPool) -> ArcFaceRecognizer:
    built = build_recognizer(ARCFACE, parity_pool)
    assert isinstance(built, ArcFaceRecognizer)
    return built


def five(face: str) -> np.ndarray:
    return np.asarray(geometry()[face]["five"], dtype=np.float64)


class Recording:
    """A session that keeps what it was fed."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.feeds: dict[str, np.ndarray] = {}

    def get_inputs(self) -> Any:
        return self.session.get_inputs()

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.feeds = dict(feeds)
        return self.session.run(names, feeds)


@pytest.mark.parametrize("face", PHOTOS)
def test_aligned_crop(recognizer: ArcFaceRecognizer, face: str, request: pytest.FixtureRequest,
                      figures: Figures) -> None:
    image = request.getfixturevalue(PHOTOS[face])
    expected = recorded(AREA, face)["crop"]
    ours = recognizer.aligned(image, five(face))
    if face not in SHRUNK:
        figures.image(AREA, ARCFACE, f"{face}: aligned crop", ours, expected)
        return
    matrix = align_matrix(five(face), "arcface_112_v2", 112)
    plain = cv2.warpAffine(image, matrix, (112, 112), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    figures.image(AREA, ARCFACE, f"{face}: aligned crop (bilinear warp)", plain, expected)
    value = psnr(ours, expected)
    figures.note(AREA, ARCFACE, f"{face}: aligned crop, area-averaged", f"{value:.1f} dB")
    assert value >= 30.0  # the same face, finer detail only


@pytest.mark.parametrize("face", PHOTOS)
def test_model_stage(recognizer: ArcFaceRecognizer, face: str, monkeypatch: pytest.MonkeyPatch,
                     figures: Figures) -> None:
    """FaceFusion's crop through slimfuse: the tensor fed to the model, the embedding, the normalised embedding."""
    reference = recorded(AREA, face)
    recording = Recording(recognizer.pool.session(ARCFACE))
    monkeypatch.setattr(recognizer.pool, "session", lambda name: recording)
    embedding = recognizer.raw_embeddings([reference["crop"]])[0]
    figures.within(AREA, ARCFACE, f"{face}: input tensor", recording.feeds["input"], reference["input"], 1e-6, "")
    figures.vector(AREA, ARCFACE, f"{face}: embedding", embedding, reference["embedding"])
    figures.vector(AREA, ARCFACE, f"{face}: normalised embedding", normalise(embedding), reference["embedding_norm"])


@pytest.mark.parametrize("face", PHOTOS)
def test_chained(recognizer: ArcFaceRecognizer, face: str, request: pytest.FixtureRequest,
                 figures: Figures) -> None:
    """slimfuse's own crop and embedding from the fixed five points."""
    image = request.getfixturevalue(PHOTOS[face])
    reference = recorded(AREA, face)
    embedding = recognizer.raw_embeddings([recognizer.aligned(image, five(face))])[0]
    if face not in SHRUNK:
        figures.vector(AREA, ARCFACE, f"{face}: chained embedding", embedding, reference["embedding"])
        return
    value = cosine(embedding, reference["embedding"])
    norm = float(np.linalg.norm(embedding) / np.linalg.norm(reference["embedding"]))
    figures.note(AREA, ARCFACE, f"{face}: chained embedding, area-averaged crop",
                 f"cosine {value:.6f}, norm x{norm:.4f}")
    assert value >= 0.99

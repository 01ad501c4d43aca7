"""The face enhancer with stand-in models on a real photo: identity gives back the face, blend, CodeFormer's weight."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

import neural_models as nm
from processor_parts import make_enhancer
from scenes import swap_image
from slimfuse.metrics import psnr
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.models.neural.enhancers import ENHANCER_NAMES
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store


@pytest.fixture(scope="module")
def neural_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("enhance")
    return ModelPool(nm.isolated_store(root / "home", store, nm.place_standins(root / "placed")))


@pytest.fixture(scope="module")
def swapped(neural_pool: ModelPool, tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray,
            astronaut_path: Path) -> np.ndarray:
    """The mesh swap alone, which the enhancer runs after."""
    return swap_image(tmp_path_factory.mktemp("swap"), astronaut_path, grace_hopper, store=neural_pool.store)


@pytest.mark.parametrize("model", ENHANCER_NAMES)
def test_identity_enhancers_give_back_the_face(neural_pool: ModelPool, tmp_path: Path, model: str,
                                               grace_hopper: np.ndarray, astronaut_path: Path,
                                               swapped: np.ndarray) -> None:
    # The mesh swap first, then the enhancer on the swapped face: compare against the mesh swap alone.
    enhanced = swap_image(tmp_path, astronaut_path, grace_hopper, store=neural_pool.store, face_enhancer_model=model,
                    face_enhancer_blend=100)
    assert psnr(enhanced, swapped) >= 35.0
    processor = make_enhancer(neural_pool, model, blend=100)
    face = FaceAnalyser(neural_pool).faces(grace_hopper)[0]
    crop = processor.crop(grace_hopper, face)
    assert crop.image.shape == (processor.size, processor.size, 3)
    alpha = processor.process([crop], None)[0].alpha
    warped = cv2.warpAffine(alpha, crop.crop_from_frame, grace_hopper.shape[1::-1],
                            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderValue=0)
    inside = cv2.dilate((warped > 0).astype(np.uint8), np.ones((3, 3)))
    assert not (np.any(enhanced != swapped, axis=2) & (inside == 0)).any()


def test_blend_scales_the_alpha_and_zero_changes_nothing(neural_pool: ModelPool, tmp_path: Path,
                                                         grace_hopper: np.ndarray, astronaut_path: Path,
                                                         swapped: np.ndarray) -> None:
    face = FaceAnalyser(neural_pool).faces(grace_hopper)[0]
    for blend in (0, 40, 100):
        processor = make_enhancer(neural_pool, "gfpgan_1.4", blend=blend)
        result = processor.process([processor.crop(grace_hopper, face)], None)[0]
        assert np.isclose(result.alpha.max(), blend / 100) and result.alpha[0].max() == 0
    none = swap_image(tmp_path, astronaut_path, grace_hopper, store=neural_pool.store, face_enhancer_model="gfpgan_1.4",
                face_enhancer_blend=0)
    assert np.array_equal(none, swapped)


@pytest.mark.parametrize("weight", [0.5, 1.0, 0.0])
def test_codeformer_gets_its_weight(neural_pool: ModelPool, grace_hopper: np.ndarray, weight: float) -> None:
    # The stand-in adds (weight - 0.5) in [-1, 1] units: 127.5 * (weight - 0.5) in pixels.
    processor = make_enhancer(neural_pool, "codeformer", blend=100, weight=weight)
    crop = processor.crop(grace_hopper, FaceAnalyser(neural_pool).faces(grace_hopper)[0])
    result = processor.process([crop], None)[0].image.astype(np.float64)
    expected = np.clip(crop.image.astype(np.float64) + 127.5 * (weight - 0.5), 0, 255)
    assert np.abs(result - expected).max() <= 1.0


def test_batched_enhancement_equals_one_by_one(tmp_path: Path, store: Store, grace_hopper: np.ndarray,
                                               astronaut: np.ndarray, neural_pool: ModelPool) -> None:
    free = ModelPool(nm.isolated_store(tmp_path / "home", store, nm.place_standins(tmp_path / "placed", True)))
    faces = [(grace_hopper, FaceAnalyser(neural_pool).faces(grace_hopper)[0]),
             (astronaut, FaceAnalyser(neural_pool).faces(astronaut)[0])]
    outputs = []
    for pool in (neural_pool, free):
        processor = make_enhancer(pool, "gpen_bfr_256", blend=100)
        outputs.append([r.image for r in processor.process([processor.crop(i, f) for i, f in faces], None)])
    for a, b in zip(*outputs, strict=True):
        assert np.array_equal(a, b)

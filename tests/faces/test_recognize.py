"""Recognizers behind one interface: ArcFace (with a stand-in model) and dlib, and reference selection by either."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import neural_models as nm
from scenes import group, swap_file
from slimfuse.faces.align import five_points, warp_face
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.recognize import ArcFaceRecognizer, DlibRecognizer, build_recognizer
from slimfuse.faces.select import FaceSelector
from slimfuse.faces.track import Track
from slimfuse.faces.types import Face
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store


def _pool(root: Path, store: Store, free_batch: bool) -> ModelPool:
    placed = root / "placed"
    nm.save(nm.recognizer(free_batch=free_batch), placed, "arcface_w600k_r50")
    return ModelPool(nm.isolated_store(root / "home", store, placed))


@pytest.fixture(scope="module")
def arcface_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return _pool(tmp_path_factory.mktemp("arcface"), store, free_batch=False)


def test_arcface_embedding_follows_the_published_recipe(arcface_pool: ModelPool, astronaut: np.ndarray) -> None:
    face = FaceAnalyser(arcface_pool).faces(astronaut)[0]
    recognizer = ArcFaceRecognizer(arcface_pool)
    crop, _ = warp_face(astronaut, five_points(face.landmarks), "arcface_112_v2", 112)
    assert np.array_equal(recognizer.crop(astronaut, face), crop)
    tensor = ((crop.astype(np.float64) - 127.5) / 127.5).transpose(2, 0, 1)[None]  # RGB (x - 127.5) / 127.5
    raw = nm.recognizer_reference(tensor)[0]
    embedding = recognizer.descriptor(astronaut, face)
    np.testing.assert_allclose(embedding, raw / np.linalg.norm(raw), rtol=1e-3, atol=1e-5)
    assert np.isclose(np.linalg.norm(embedding), 1.0)
    assert np.isclose(recognizer.distance(embedding, embedding), 0.0, atol=1e-6)
    assert np.isclose(recognizer.distance(embedding, -embedding), 2.0)


def test_batched_and_one_by_one_embeddings_agree(arcface_pool: ModelPool, tmp_path: Path, store: Store,
                                                 grace_hopper: np.ndarray, astronaut: np.ndarray) -> None:
    free = _pool(tmp_path, store, free_batch=True)
    crops = []
    for image in (grace_hopper, astronaut, grace_hopper[:, ::-1].copy()):
        face = FaceAnalyser(arcface_pool).faces(image)[0]
        crops.append(ArcFaceRecognizer(arcface_pool).crop(image, face))
    fixed = ArcFaceRecognizer(arcface_pool).raw_embeddings(crops)
    batched = ArcFaceRecognizer(free).raw_embeddings(crops)
    np.testing.assert_allclose(batched, fixed, rtol=1e-4, atol=1e-4)


def test_both_recognizers_behind_one_interface(arcface_pool: ModelPool) -> None:
    assert isinstance(build_recognizer("dlib", arcface_pool), DlibRecognizer)
    arcface = build_recognizer("arcface_w600k_r50", arcface_pool)
    assert isinstance(arcface, ArcFaceRecognizer)
    for recognizer in (build_recognizer("dlib", arcface_pool), arcface):
        assert 0 < recognizer.same_person < 2
    with pytest.raises(ValueError, match="unknown face recognizer"):
        build_recognizer("facenet", arcface_pool)
    a, b = np.array([1.0, 0.0]), np.array([0.6, 0.8])
    dlib = build_recognizer("dlib", arcface_pool)
    assert np.isclose(arcface.distance(a, b), 0.4) and np.isclose(dlib.distance(a, b), np.sqrt(0.8))
    np.testing.assert_allclose(arcface.combined([a, b]), (a + b) / np.linalg.norm(a + b))


def test_reference_selection_uses_the_recognizers_metric() -> None:
    face = Face(box=np.array([0, 0, 10, 10], np.float32), score=1.0, keypoints=np.zeros((6, 2), np.float32))
    tracks = [Track(id=index, face=face, raw=face, filter=None) for index in range(3)]
    vectors = {0: np.array([1.0, 0.0]), 1: np.array([0.0, 1.0]), 2: np.array([0.9, 0.1])}
    cosine = ArcFaceRecognizer.distance
    selector = FaceSelector("reference", np.array([1.0, 0.0]), max_distance=0.3,
                            metric=lambda x, y: cosine(None, x, y))  # type: ignore[arg-type]
    chosen = selector.select(tracks, lambda track: vectors[track.id])
    assert [track.id for track in chosen] == [0, 2]


def test_the_image_swap_selects_by_arcface(models_dir: Path, tmp_path: Path, grace_hopper: np.ndarray,
                                           astronaut: np.ndarray, grace_hopper_path: Path,
                                           astronaut_path: Path) -> None:
    """Reference mode on three Grace Hoppers and three astronauts, the reference her portrait: by the stand-in's
    distances (about 0.04 to her faces, 0.59 to the others) exactly her three faces are swapped."""
    nm.save(nm.recognizer(), models_dir, "arcface_w600k_r50")
    scene = group(grace_hopper, astronaut, width=900, height=600, face_px=110)
    target = tmp_path / "group.png"
    Image.fromarray(scene.image).save(target)
    output = swap_file(astronaut_path, target, tmp_path / "out.png", models_dir=models_dir,
                       face_selector_mode="reference", reference_face_image=grace_hopper_path,
                       face_recognizer_model="arcface_w600k_r50", reference_face_distance=0.3)
    result = np.asarray(Image.open(output).convert("RGB")).astype(np.int16)
    for index, (x0, y0, x1, y1) in enumerate(scene.faces):
        region = (slice(int(y0), int(y1)), slice(int(x0), int(x1)))
        change = np.abs(result[region] - scene.image[region]).mean()
        if index % 2 == 0:  # Grace Hopper's faces
            assert change > 5, (index, change)
        else:
            assert change == 0, (index, change)

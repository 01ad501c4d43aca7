"""The neural swapper with stand-in models on the real photos: identity models give back the target, the source
identity goes in as each model needs it, batches where the batch axis allows, pixel boost."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import neural_models as nm
from processor_parts import make_swapper
from scenes import group
from scenes import swap_image
from slimfuse.metrics import psnr
from slimfuse.faces.align import five_points, warp_face
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.recognize import normalise
from slimfuse.models.initializers import last_initializer
from slimfuse.models.neural.swappers import SWAPPER_NAMES
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import SourcePhoto
from slimfuse.processors.onnx_swap import OnnxSwapProcessor, SwapSource, emap_of, inswapper_latent


@pytest.fixture(scope="module")
def neural_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("neural")
    placed = nm.place_standins(root / "placed")
    return ModelPool(nm.isolated_store(root / "home", store, placed))


@pytest.fixture(scope="module")
def batch_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("neural_batch")
    placed = nm.place_standins(root / "placed", free_batch=True)
    return ModelPool(nm.isolated_store(root / "home", store, placed))


def frame_alpha(processor: OnnxSwapProcessor, frame: np.ndarray, faces: list) -> np.ndarray:  # type: ignore[type-arg]
    """Where paste-back may change the frame: each crop's alpha through the inverse crop transform."""
    total = np.zeros(frame.shape[:2], dtype=np.float32)
    for face in faces:
        crop = processor.crop(frame, face)
        alpha = processor.mask(crop)
        warped = cv2.warpAffine(alpha, crop.crop_from_frame, (frame.shape[1], frame.shape[0]),
                                flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderValue=0)
        total = np.maximum(total, warped)
    return total


CASES = [(name, None) for name in SWAPPER_NAMES] + [("inswapper_128", 256), ("inswapper_128", 512),
                                                   ("hyperswap_1a_256", 512)]


@pytest.mark.parametrize(("model", "boost"), CASES, ids=[f"{m}-{b or 'own'}" for m, b in CASES])
def test_identity_swappers_give_back_the_target(neural_pool: ModelPool, tmp_path: Path, model: str, boost: int | None,
                                                grace_hopper: np.ndarray, astronaut_path: Path) -> None:
    result = swap_image(tmp_path, astronaut_path, grace_hopper, store=neural_pool.store, face_swapper_model=model,
                  face_swapper_pixel_boost=boost)
    assert result.shape == grace_hopper.shape
    assert psnr(result, grace_hopper) >= 35.0
    processor = make_swapper(neural_pool, model, boost)
    faces = FaceAnalyser(neural_pool).faces(grace_hopper)[:1]
    inside = cv2.dilate((frame_alpha(processor, grace_hopper, faces) > 0).astype(np.uint8), np.ones((3, 3)))
    changed = np.any(result != grace_hopper, axis=2)
    assert changed.sum() > 1000  # the face really went through the model and back
    assert not (changed & (inside == 0)).any()  # exactly equal outside the mask


def test_pixel_boost_brings_back_more_detail(neural_pool: ModelPool, tmp_path: Path, grace_hopper: np.ndarray,
                                             astronaut_path: Path) -> None:
    scores = [psnr(swap_image(tmp_path, astronaut_path, grace_hopper, store=neural_pool.store, face_swapper_model="inswapper_128",
                        face_swapper_pixel_boost=boost), grace_hopper) for boost in (None, 256, 512)]
    assert scores[0] < scores[1] < scores[2]


def test_the_emap_is_the_graphs_last_initializer(neural_pool: ModelPool, tmp_path: Path) -> None:
    emap = np.random.default_rng(3).normal(size=(512, 512)).astype(np.float32)
    path = nm.save(nm.padded(nm.inswapper(emap=emap), 1 << 20), tmp_path, "inswapper_128")
    assert np.array_equal(last_initializer(path), emap)
    assert np.array_equal(last_initializer(path), numpy_helper.to_array(onnx.load(str(path)).graph.initializer[-1]))
    placed = nm.spec_of("inswapper_128").filename
    expected = numpy_helper.to_array(onnx.load(str(neural_pool.store.path("inswapper_128"))).graph.initializer[-1])
    assert placed.endswith(".onnx") and np.array_equal(emap_of(neural_pool, "inswapper_128"), expected)
    with pytest.raises(ValueError):
        last_initializer(nm.save(nm.identity_enhancer("gfpgan_1.4"), tmp_path, "gfpgan_1.4"))  # no initializers


def test_inswapper_latent_is_the_normalised_embedding_times_the_emap() -> None:
    rng = np.random.default_rng(0)
    embedding, emap = rng.normal(size=512), rng.normal(size=(512, 512)).astype(np.float32)
    expected = (embedding / np.linalg.norm(embedding)) @ emap
    expected /= np.linalg.norm(expected)
    np.testing.assert_allclose(inswapper_latent(embedding * 7.5, emap)[0], expected, rtol=1e-4, atol=1e-6)


def _arcface_reference(image: np.ndarray, face) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The recognizer stand-in's raw embedding, computed here from the published recipe: arcface_112_v2 at 112,
    RGB (x - 127.5) / 127.5."""
    crop, _ = warp_face(image, five_points(face.landmarks), "arcface_112_v2", 112)
    tensor = ((crop.astype(np.float64) - 127.5) / 127.5).transpose(2, 0, 1)[None]
    return nm.recognizer_reference(tensor)[0]


def expected_source(pool: ModelPool, model: str, image: np.ndarray, face) -> np.ndarray:  # type: ignore[no-untyped-def]
    """What the swapper's `source` input must be, from the published recipes: inswapper the normalised ArcFace
    embedding through the emap, normalised; hyperswap the normalised embedding; simswap the embedding through
    its converter, normalised (hififace likewise); ghost the same, as it comes out; blendswap and uniface a
    picture of the face / 255."""
    raw = _arcface_reference(image, face)
    normed = raw / np.linalg.norm(raw)
    if model.startswith("inswapper"):
        return inswapper_latent(normed, emap_of(pool, model))
    if model.startswith("hyperswap"):
        return normed[None]
    if model.startswith(("simswap", "ghost", "hififace")):
        converted = raw @ nm.converter_matrix()
        return (converted if model.startswith("ghost") else converted / np.linalg.norm(converted))[None]
    template, size = ("arcface_112_v2", 112) if model == "blendswap_256" else ("ffhq_512", 256)
    picture, _ = warp_face(image, five_points(face.landmarks), template, size)
    return (picture / 255.0).transpose(2, 0, 1)[None]


@pytest.mark.parametrize("model", ["inswapper_128", "hyperswap_1b_256", "simswap_256", "ghost_2_256",
                                   "blendswap_256", "uniface_256"])
def test_the_source_goes_in_as_each_model_takes_it(neural_pool: ModelPool, model: str, astronaut: np.ndarray) -> None:
    face = FaceAnalyser(neural_pool).faces(astronaut)[0]
    prepared = make_swapper(neural_pool, model).prepare([SourcePhoto(image=astronaut, face=face)])
    assert isinstance(prepared, SwapSource) and prepared.tensor.dtype == np.float32
    expected = expected_source(neural_pool, model, astronaut, face)
    if expected.ndim == 4:
        np.testing.assert_allclose(prepared.tensor, expected, atol=1e-6)
        return
    assert prepared.tensor.shape == (1, 512)
    np.testing.assert_allclose(prepared.tensor, expected, rtol=2e-3, atol=2e-4)
    if prepared.embedding is not None:
        raw = _arcface_reference(astronaut, face)
        np.testing.assert_allclose(prepared.embedding, raw / np.linalg.norm(raw), rtol=2e-3, atol=2e-4)


TINT = 4.0


@pytest.fixture(scope="module")
def tint_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("neural_tint")
    placed = nm.place_standins(root / "placed", source_tint=TINT)
    return ModelPool(nm.isolated_store(root / "home", store, placed))


class _Recording:
    """A session wrapper that keeps the batch size and the `source` of every run."""

    def __init__(self, session: object) -> None:
        self.session = session
        self.batches: list[int] = []
        self.sources: list[np.ndarray] = []

    def get_inputs(self):  # type: ignore[no-untyped-def]
        return self.session.get_inputs()  # type: ignore[attr-defined]

    def get_providers(self):  # type: ignore[no-untyped-def]
        return self.session.get_providers()  # type: ignore[attr-defined]

    def run(self, names, feeds, options=None):  # type: ignore[no-untyped-def]
        self.batches.append(len(feeds["target"]))
        self.sources.append(np.array(feeds["source"]))
        return self.session.run(names, feeds, options)  # type: ignore[attr-defined]


@pytest.mark.parametrize("model", SWAPPER_NAMES)
def test_the_source_reaches_the_model_exactly_and_shapes_the_face(tint_pool: ModelPool, model: str,
                                                                  astronaut: np.ndarray, grace_hopper: np.ndarray,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-ins that tint their output by the source they are fed: the swapped crop is the target plus the tint
    of the source each recipe prescribes (ArcFace, the emap, the converters), so a source that never reaches the
    model, or reaches it changed, shows."""
    analyser = FaceAnalyser(tint_pool)
    processor = make_swapper(tint_pool, model)
    source_face = analyser.faces(astronaut)[0]
    prepared = processor.prepare([SourcePhoto(image=astronaut, face=source_face)])
    recording, original = _Recording(tint_pool.session(model)), tint_pool.session
    monkeypatch.setattr(tint_pool, "session", lambda name: recording if name == model else original(name))
    crop = processor.crop(grace_hopper, analyser.faces(grace_hopper)[0])
    (result,) = processor.process([crop], prepared)
    expected = expected_source(tint_pool, model, astronaut, source_face)
    (fed,) = recording.sources
    np.testing.assert_allclose(fed, expected, rtol=2e-3, atol=2e-4)
    low, high = nm.spec_of(model).io.output_range  # type: ignore[union-attr]
    tint = nm.tint_of(expected, TINT)[0] * 255.0 / (high - low)
    assert np.abs(tint).max() > 10  # a tint that shows
    predicted = np.clip(np.rint(crop.image.astype(np.float64) + tint), 0, 255)
    assert np.abs(result.image.astype(np.float64) - predicted).max() <= 1.0


@pytest.fixture(scope="module")
def six_faces(grace_hopper: np.ndarray, astronaut: np.ndarray) -> np.ndarray:
    return group(grace_hopper, astronaut, width=900, height=600, face_px=110).image


def _process_counting(pool: ModelPool, frame: np.ndarray, source: np.ndarray, boost: int | None,
                      monkeypatch: pytest.MonkeyPatch) -> tuple[list[np.ndarray], list[int]]:
    processor = make_swapper(pool, "inswapper_128", boost)
    source_face = FaceAnalyser(pool).faces(source)[0]
    prepared = processor.prepare([SourcePhoto(image=source, face=source_face)])
    counting = _Recording(pool.session("inswapper_128"))
    original = pool.session
    monkeypatch.setattr(pool, "session", lambda name: counting if name == "inswapper_128" else original(name))
    faces = FaceAnalyser(pool).faces(frame)
    results = processor.process([processor.crop(frame, face) for face in faces], prepared)
    monkeypatch.undo()
    return [result.image for result in results], counting.batches


@pytest.mark.parametrize("boost", [None, 256])
def test_batches_where_the_batch_axis_allows(neural_pool: ModelPool, batch_pool: ModelPool, six_faces: np.ndarray,
                                             astronaut: np.ndarray, boost: int | None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fixed, fixed_runs = _process_counting(neural_pool, six_faces, astronaut, boost, monkeypatch)
    free, free_runs = _process_counting(batch_pool, six_faces, astronaut, boost, monkeypatch)
    tiles = 6 * (1 if boost is None else 4)
    assert len(fixed) == len(free) == 6
    assert fixed_runs == [1] * tiles  # a model fixed at batch 1 runs face by face (tile by tile)
    assert sum(free_runs) == tiles and max(free_runs) > 1 and len(free_runs) == -(-tiles // 8)
    for a, b in zip(fixed, free, strict=True):
        assert np.array_equal(a, b)


def test_many_faces_are_swapped_back_to_themselves(neural_pool: ModelPool, tmp_path: Path, six_faces: np.ndarray,
                                                   astronaut_path: Path) -> None:
    result = swap_image(tmp_path, astronaut_path, six_faces, store=neural_pool.store, face_swapper_model="hyperswap_1a_256",
                  face_selector_mode="many")
    assert psnr(result, six_faces) >= 35.0
    processor = make_swapper(neural_pool, "hyperswap_1a_256")
    faces = FaceAnalyser(neural_pool).faces(six_faces)
    assert len(faces) == 6
    inside = cv2.dilate((frame_alpha(processor, six_faces, faces) > 0).astype(np.uint8), np.ones((3, 3)))
    assert not (np.any(result != six_faces, axis=2) & (inside == 0)).any()


def test_normalise_is_l2() -> None:
    vectors = np.random.default_rng(2).normal(size=(4, 512))
    np.testing.assert_allclose(np.linalg.norm(normalise(vectors), axis=1), 1.0, rtol=1e-6)

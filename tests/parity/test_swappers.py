"""The neural swappers against FaceFusion 3.8.1's recorded outputs (tests/parity/reference/swappers), on the parity
stand-ins (random convolutions with FaceFusion's tensor contracts) loaded through slimfuse's store.

Stage by stage, each fed FaceFusion's recorded input of that stage: the source identity (the raw embeddings given to
both, with --face-swapper-weight 0, 0.5, 1), the aligned target crop, the model's output crop, the pasted frame.
Then slimfuse's own stages chained from the fixed geometry. What differs on purpose: inswapper's latent is normalised
once more (insightface's reading; FaceFusion's has the same direction, another length), and slimfuse's box mask
lowers FaceFusion's faint border to 0 (the chain here uses the box both share).
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest

import neural_models as nm
from parity import standins
from parity.reference import cosine, Figures, geometry, mask_float, psnr, recorded, standin_pool
from processor_parts import make_swapper
from slimfuse.config import SwapOptions
from slimfuse.config import MaskOptions
from slimfuse.faces.recognize import ArcFaceRecognizer
from slimfuse.faces.align import (LEFT_EYE_RING, align_matrix, LEFT_MOUTH_CORNER, NOSE_TIP, RIGHT_EYE_RING, RIGHT_MOUTH_CORNER,
                                  transform_points, warp_face)
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.neural.swappers import RECIPES
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.blend import paste_back
from slimfuse.processors.mask_types import blurred_box
from slimfuse.processors.onnx_swap import (OnnxSwapProcessor, SwapSource, balance_identity, emap_of,
                                           identity_latent)
from slimfuse.processors.paste_masks import FaceMasker

AREA = "swappers"
SWAPPERS = [contract.name for contract in standins.SWAPPERS]
WEIGHTS = {"w0": 0.0, "w50": 0.5, "w100": 1.0}
RENORMALISED = ("inswapper_128", "inswapper_128_fp16")
"""Whose latent slimfuse normalises after the emap (insightface's INSwapper.get) and FaceFusion does not."""


def boosts(model: str) -> list[int]:
    return sorted(int(key.split("_")[1]) for key in recorded("swappers", model) if key.startswith("crop_"))


CASES = [(model, boost) for model in SWAPPERS for boost in boosts(model)]
IDS = [f"{model}-{boost}" for model, boost in CASES]


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("parity_swappers")
    nm.save(nm.recognizer(), root / "placed", "arcface_w600k_r50")  # reads the target faces for the weight
    return standin_pool(root, store, (contract.name for contract in (*standins.SWAPPERS, *standins.CONVERTERS)))


@pytest.fixture(scope="module")
def target_rgb(astronaut: np.ndarray) -> np.ndarray:
    return astronaut


def raw_embedding(seed: int) -> np.ndarray:
    """The raw identity vectors both programs were given (tools/facefusion_reference/common.py `embedding`)."""
    return (np.random.Generator(np.random.PCG64(seed)).standard_normal(512) * 0.9).astype(np.float32)


def five(key: str) -> np.ndarray:
    return np.asarray(geometry()[key]["five"], dtype=np.float64)


def latent(pool: ModelPool, model: str, weight: float) -> np.ndarray:
    """slimfuse's `source` tensor for the fixed raw embeddings (source 2, target 1)."""
    recipe = RECIPES[model]

    def convert(mean: np.ndarray) -> np.ndarray:
        return pool.session(recipe.converter or "").run(None, {"input": mean})[0]

    value = identity_latent(recipe, raw_embedding(2)[None], lambda: emap_of(pool, model), convert)
    return value if weight == 0.5 else balance_identity(value, raw_embedding(1), weight, recipe.family)


def processor(pool: ModelPool, model: str, boost: int) -> OnnxSwapProcessor:
    size = pool.store.catalog.get(model).io.crop_size  # type: ignore[union-attr]
    return make_swapper(pool, model, None if boost == size else boost)


def crop_of(image: np.ndarray, matrix: np.ndarray) -> FaceCrop:
    """A crop whose mesh gives the fixed five points (in crop pixels) to whatever reads them."""
    points = transform_points(matrix, five("target"))
    mesh = np.zeros((468, 3), np.float32)
    for index, ring in enumerate((RIGHT_EYE_RING, LEFT_EYE_RING)):
        mesh[list(ring), :2] = points[index]
    mesh[[NOSE_TIP, RIGHT_MOUTH_CORNER, LEFT_MOUTH_CORNER], :2] = points[2:]
    return FaceCrop(image=image, landmarks=mesh, crop_from_frame=matrix)


def image_source(model: str, source_rgb: np.ndarray) -> np.ndarray:
    recipe = RECIPES[model]
    picture, _ = warp_face(source_rgb, five("source"), recipe.source_template or "", recipe.source_size or 0)
    return (picture.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]


@pytest.mark.parametrize("model", SWAPPERS)
def test_source_identity(parity_pool: ModelPool, model: str, grace_hopper: np.ndarray, figures: Figures) -> None:
    reference = recorded("swappers", model)
    if RECIPES[model].source == "image":  # blendswap, uniface: a picture of the source face
        recipe = RECIPES[model]
        size = recipe.source_size or 0
        matrix = align_matrix(five("source"), recipe.source_template or "", size)
        plain = cv2.warpAffine(grace_hopper, matrix, (size, size), flags=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_REPLICATE)
        expected = reference["source"][0].transpose(1, 2, 0) * 255
        figures.image(AREA, model, "source picture (bilinear warp)", plain, expected)
        # slimfuse area-averages a face it shrinks more than 2x (Grace Hopper's to 112 px): no aliasing, so it
        # differs from FaceFusion's bilinear picture in fine detail only
        ours = image_source(model, grace_hopper)[0].transpose(1, 2, 0) * 255
        assert psnr(ours, expected) >= 30.0
        figures.note(AREA, model, "source picture as slimfuse makes it (area-averaged)",
                     f"{psnr(ours, expected):.1f} dB")
        return
    for key, weight in WEIGHTS.items():
        ours, theirs = latent(parity_pool, model, weight), reference[f"source_{key}"]
        if model in RENORMALISED and weight != 0.5:
            # FaceFusion mixes its longer latent with the unit target: the mix's direction shifts with the length.
            assert cosine(ours, theirs) >= 0.99, f"{model} weight {weight}"
            figures.note(AREA, model, f"source tensor, weight {weight}", f"cosine {cosine(ours, theirs):.4f}")
            continue
        figures.vector(AREA, model, f"source tensor, weight {weight}", ours, theirs, scale=model not in RENORMALISED)


@pytest.mark.parametrize(("model", "boost"), CASES, ids=IDS)
def test_aligned_crop(parity_pool: ModelPool, model: str, boost: int, target_rgb: np.ndarray,
                      figures: Figures) -> None:
    reference = recorded("swappers", model)
    crop, matrix = warp_face(target_rgb, five("target"), parity_pool.store.catalog.get(model).io.template, boost)  # type: ignore[arg-type, union-attr]
    np.testing.assert_allclose(matrix, reference[f"matrix_{boost}"], atol=1e-3 * boost / 128)
    figures.image(AREA, model, f"aligned crop {boost} px", crop, reference[f"crop_{boost}"])


@pytest.mark.parametrize(("model", "boost"), CASES, ids=IDS)
def test_model_output(parity_pool: ModelPool, model: str, boost: int, figures: Figures) -> None:
    """The swapper stage alone: FaceFusion's crop and source tensor in, the output crop compared."""
    reference = recorded("swappers", model)
    source = reference["source"] if "source" in reference else reference["source_w50"]
    swapper = processor(parity_pool, model, boost)
    (result,) = swapper.process([crop_of(reference[f"crop_{boost}"], reference[f"matrix_{boost}"])],
                                SwapSource(tensor=source.astype(np.float32), embedding=None))
    figures.image(AREA, model, f"output crop {boost} px", result.image, reference[f"output_{boost}"])


@pytest.mark.parametrize(("model", "boost"), CASES, ids=IDS)
def test_paste_back(model: str, boost: int, target_rgb: np.ndarray, figures: Figures) -> None:
    """FaceFusion's output crop, box mask and matrix pasted by slimfuse into the target."""
    reference = recorded("swappers", model)
    pasted = paste_back(target_rgb, reference[f"output_{boost}"], mask_float(reference[f"box_mask_{boost}"]),
                        reference[f"matrix_{boost}"])
    x1, y1, x2, y2 = reference[f"paste_box_{boost}"]
    figures.image(AREA, model, f"pasted frame {boost} px", pasted[y1:y2, x1:x2], reference[f"frame_{boost}"])


@pytest.mark.parametrize(("model", "boost"), CASES, ids=IDS)
def test_whole_swap(parity_pool: ModelPool, model: str, boost: int, target_rgb: np.ndarray,
                    grace_hopper: np.ndarray, figures: Figures) -> None:
    """slimfuse's stages chained from the fixed geometry and raw embeddings: crop, source, model, box, paste."""
    reference = recorded("swappers", model)
    swapper = processor(parity_pool, model, boost)
    crop, matrix = warp_face(target_rgb, five("target"), swapper.template, boost)
    if RECIPES[model].source == "image":
        source = image_source(model, grace_hopper)
    elif model in RENORMALISED:
        # the last stage both agree on is the latent's direction: give the model FaceFusion's length
        ours = latent(parity_pool, model, 0.5)
        source = ours * np.linalg.norm(reference["source_w50"]) / np.linalg.norm(ours)
    else:
        source = latent(parity_pool, model, 0.5)
    (result,) = swapper.process([crop_of(crop, matrix)], SwapSource(tensor=source.astype(np.float32), embedding=None))
    box = blurred_box(boost, boost, 0.3)
    pasted = paste_back(target_rgb, result.image, box, matrix)
    x1, y1, x2, y2 = reference[f"paste_box_{boost}"]
    figures.image(AREA, model, f"whole swap {boost} px (slimfuse's stages chained)", pasted[y1:y2, x1:x2],
                  reference[f"frame_{boost}"])


def test_weight_moves_the_identity_toward_the_target(parity_pool: ModelPool) -> None:
    """--face-swapper-weight 0 brings the source tensor nearer the target's identity, 1 farther, 0.5 not at all."""
    target = raw_embedding(1) / np.linalg.norm(raw_embedding(1))
    nearness = [cosine(latent(parity_pool, "hyperswap_1a_256", weight), target) for weight in (0.0, 0.5, 1.0)]
    assert nearness[0] > nearness[1] > nearness[2]


def test_the_weight_reaches_the_model_per_face(parity_pool: ModelPool, target_rgb: np.ndarray) -> None:
    """Through the processor: at weight 0 each target face's own embedding (from its crop) is mixed in, so the
    output differs from weight 0.5's; the source tensor fed is FaceFusion's balance of the two."""
    masker = FaceMasker(parity_pool, MaskOptions(face_mask_types=("box",)), None)
    outputs = {}
    for weight in (0.5, 0.0):
        swapper = OnnxSwapProcessor(parity_pool, SwapOptions(face_swapper_model="hyperswap_1a_256",
                                                             face_swapper_weight=weight),
                                    None, masker, AdaptiveBatcher(parity_pool))
        assert swapper.balances == (weight != 0.5)
        crop, matrix = warp_face(target_rgb, five("target"), swapper.template, 256)
        prepared = SwapSource(tensor=latent(parity_pool, "hyperswap_1a_256", 0.5), embedding=np.ones(512, np.float32))
        (result,) = swapper.process([crop_of(crop, matrix)], prepared)
        outputs[weight] = result.image.astype(np.float64)
    assert np.abs(outputs[0.0] - outputs[0.5]).mean() > 1.0


@pytest.mark.parametrize("model", ["inswapper_128", "hyperswap_1a_256", "simswap_unofficial_512"])
def test_the_target_identity_read_from_the_crop(parity_pool: ModelPool, model: str, target_rgb: np.ndarray,
                                                figures: Figures) -> None:
    """The weight's target embedding comes from the swapper's crop realigned to ArcFace's template (the frame is
    gone by then); FaceFusion reads it from the frame. The two agree closely."""
    swapper = processor(parity_pool, model, parity_pool.store.catalog.get(model).io.crop_size)  # type: ignore[union-attr]
    crop, matrix = warp_face(target_rgb, five("target"), swapper.template, swapper.size)
    recognizer = ArcFaceRecognizer(parity_pool)
    from_crop = recognizer.raw_embeddings([recognizer.aligned(crop, transform_points(matrix, five("target")))])
    from_frame = recognizer.raw_embeddings([recognizer.aligned(target_rgb, five("target"))])
    assert cosine(from_crop, from_frame) >= 0.999
    figures.note(AREA, model, "target identity from the crop against the frame",
                 f"cosine {cosine(from_crop, from_frame):.5f}")

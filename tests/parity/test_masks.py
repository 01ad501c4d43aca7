"""Parity with FaceFusion 3.8.1's face masks (tests/parity/reference/masks/masks.npz, written by
tools/facefusion_reference/record_masks.py): the box, the XSeg occluders, the BiSeNet parsers' regions, the areas
around the 68 points and their combination, each computed by slimfuse's own code on FaceFusion's crop of the target
(hyperswap_1a_256's: arcface_128 at 256 px), the mask models being the parity stand-ins loaded through a store.

slimfuse's box mask lowers FaceFusion's blurred box so that the crop's border is exactly 0: the blurred box is
compared, and the lowering on its own.
"""
from __future__ import annotations

import numpy as np
import pytest

from parity import standins
from parity.reference import MAX_PIXELS, Figures, geometry, mask_float, recorded, standin_pool
from slimfuse.config import MASK_AREAS, MaskOptions
from slimfuse.faces.align import align_matrix, five_points, landmarks_in_crop, warp_to_crop
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.mask_types import EDGE_SIGMA, area_mask, blurred_box, border_to_zero, box_mask, crop_masks
from slimfuse.processors.occlusion import Occluder
from slimfuse.processors.parsing import FaceParser, ParserOptions
from slimfuse.processors.paste_masks import FaceMasker

AREA = "masks"

SIZE = 256
BLURS = {"b0": 0.0, "b30": 0.3, "b60": 0.6}
PADDINGS = {"p0": (0, 0, 0, 0), "p10_20_30_40": (10, 20, 30, 40)}
OCCLUDERS = [contract.name for contract in standins.OCCLUDERS]
PARSERS = [contract.name for contract in standins.PARSERS]
FACEFUSION_REGIONS = ("skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth",
                      "upper-lip", "lower-lip")
SELECTIONS = {"all": FACEFUSION_REGIONS, "skin_nose_mouth": ("skin", "nose", "mouth"), "glasses": ("glasses",),
              "brows_lips": ("left-eyebrow", "right-eyebrow", "upper-lip", "lower-lip")}
AREAS = {"upper_face": ("upper-face",), "lower_face": ("lower-face",), "mouth": ("mouth",), "all": MASK_AREAS}
COMBINED = MaskOptions(face_mask_types=("box", "occlusion", "area", "region"), face_mask_blur=0.3,
                       face_occluder_model="xseg_1", face_parser_model="bisenet_resnet_34",
                       face_mask_regions=FACEFUSION_REGIONS, face_mask_areas=MASK_AREAS)


def levels(mask: np.ndarray) -> np.ndarray:
    """A float mask in [0, 1] as the recorder stores FaceFusion's: uint8 x 255, rounded."""
    return np.clip(np.rint(np.asarray(mask, dtype=np.float64) * 255), 0, 255).astype(np.uint8)


def reference(name: str) -> np.ndarray:
    return recorded("masks", "masks")[name]


@pytest.fixture(scope="module")
def mask_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    """The mask stand-ins placed as a user places model files, in a store of their own."""
    root = tmp_path_factory.mktemp("parity_masks")
    return standin_pool(root, store, (*OCCLUDERS, *PARSERS))


@pytest.mark.parametrize("blur", BLURS)
@pytest.mark.parametrize("padding", PADDINGS)
def test_box_mask(blur: str, padding: str, figures: Figures) -> None:
    expected = reference(f"box_{blur}_{padding}")
    shared = blurred_box(SIZE, SIZE, BLURS[blur], PADDINGS[padding])
    figures.image(AREA, "box", f"blurred box, blur {blur}, padding {padding}", levels(shared), expected)
    # After the shared stage slimfuse only lowers the border to 0: FaceFusion's box, lowered, is slimfuse's.
    lowered = box_mask(SIZE, SIZE, BLURS[blur], PADDINGS[padding])
    figures.image(AREA, "box", f"border lowered, blur {blur}, padding {padding}", levels(lowered),
                  levels(border_to_zero(mask_float(expected))))
    edge = max(mask_float(expected)[0].max(), mask_float(expected)[:, 0].max())
    assert lowered[0].max() == lowered[:, 0].max() == 0.0
    if blur != "b0" and padding == "p0":  # what the lowering removes: FaceFusion's box at the crop's border
        assert 0.02 < edge < 0.1


@pytest.mark.parametrize("model", OCCLUDERS)
def test_occluder(mask_pool: ModelPool, model: str, figures: Figures) -> None:
    occluder = Occluder(mask_pool.session(model))
    crop = reference("crop")
    figures.image(AREA, model, "occluder output", levels(occluder.raw([crop])[0]), reference(f"occluder_raw_{model}"))
    mask = occluder.masks([crop])[0]
    figures.image(AREA, model, "occlusion mask", levels(mask), reference(f"occlusion_{model}"))
    assert 0.2 < mask.mean() < 0.8  # patches of both: the stand-in's mask is not all visible nor all covered


@pytest.mark.parametrize("model", PARSERS)
def test_parser(mask_pool: ModelPool, model: str, figures: Figures) -> None:
    crop = reference("crop")
    classes = FaceParser(mask_pool.session(model), ParserOptions(regions=())).classes([crop])[0]
    expected = reference(f"parser_classes_{model}")
    assert classes.shape == expected.shape and np.mean(classes == expected) >= 0.999, f"{model}: classes differ"
    for selection, regions in SELECTIONS.items():
        mask = FaceParser(mask_pool.session(model), ParserOptions(regions=regions)).masks([crop])[0]
        figures.image(AREA, model, f"region mask {selection}", levels(mask), reference(f"region_{model}_{selection}"))


@pytest.mark.parametrize("areas", AREAS)
def test_area_mask(areas: str, figures: Figures) -> None:
    mask = area_mask(reference("points_68"), SIZE, SIZE, AREAS[areas], EDGE_SIGMA * SIZE)
    figures.image(AREA, "area", f"area mask {areas}", levels(mask), reference(f"area_{areas}"))
    assert mask.max() > 0.9


def test_points_68_move_into_the_crop_as_in_facefusion() -> None:
    points = np.asarray(geometry()["target"]["landmark_68"], dtype=np.float64)
    moved = landmarks_in_crop(np.column_stack([points, np.zeros(len(points))]), reference("matrix"))[:, :2]
    assert np.abs(moved - reference("points_68")).max() <= 1e-3  # float32 landmarks, 256 px


def test_combined_masks(mask_pool: ModelPool, figures: Figures) -> None:
    crop = reference("crop")
    occluder = Occluder(mask_pool.session("xseg_1"))
    parser = FaceParser(mask_pool.session("bisenet_resnet_34"), ParserOptions(regions=FACEFUSION_REGIONS))
    combined = crop_masks([crop], COMBINED, occluder=occluder, parser=parser, points_68=[reference("points_68")])[0]
    figures.image(AREA, "combined", "box, occlusion, area and region on FaceFusion's crop", levels(combined),
                  reference("combined"))
    # FaceFusion's swap_face parses its swapped crop, not the target's (slimfuse parses the target's): fed that
    # crop, slimfuse's parser gives FaceFusion's mask as swap_face pastes with it.
    swapped_regions = parser.masks([reference("swapped")])[0]
    shared = crop_masks([crop], MaskOptions(**{**vars(COMBINED), "face_mask_types": ("box", "occlusion", "area")}),
                        occluder=occluder, points_68=[reference("points_68")])[0]
    figures.image(AREA, "combined", "box, occlusion, area and the swapped crop's regions",
                  levels(np.minimum(shared, swapped_regions)), reference("combined_swapped"))


def test_masks_from_slimfuses_own_face(mask_pool: ModelPool, astronaut: np.ndarray, figures: Figures) -> None:
    """End to end from the photo: slimfuse's FaceMesh, its five and 68 points, its warp and its masker."""
    mesh = FaceAnalyser(mask_pool).faces(astronaut)[0].landmarks
    assert mesh is not None
    five = five_points(mesh)
    assert np.abs(five - np.asarray(geometry()["target"]["five"])).max() <= 0.5
    matrix = align_matrix(five, "arcface_128", SIZE)
    crop = FaceCrop(warp_to_crop(astronaut, matrix, SIZE), landmarks_in_crop(mesh, matrix), matrix)
    # geometry.json's 68 points are these but for the eyes (moved onto the five points' eye centres)
    moved = np.abs(landmarks_68(crop.landmarks) - reference("points_68")).max(axis=1)
    assert np.delete(moved, np.s_[36:48]).max() <= MAX_PIXELS
    combined = FaceMasker(mask_pool, COMBINED, None).masks([crop])[0]
    figures.image(AREA, "combined", "from slimfuse's own crop and points", levels(combined), reference("combined"))

"""Face masks: the box mask, XSeg occluders and BiSeNet parsers on stand-in ONNX models, and their combination.

The stand-ins have the real models' tensor names and shapes (from the catalog) and a known answer:
- the occluder returns the crop's red channel / 255 (so it also shows that the crop goes in as BGR / 255);
- the parser reads a class index from the red channel (class x 10) after undoing ImageNet's normalisation and
  returns logits peaked at that class (so the crop must go in as RGB with ImageNet's mean and std).
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

import neural_models as nm
from processor_parts import make_swapper
from slimfuse.faces.align import align_matrix, five_points, landmarks_in_crop, warp_to_crop
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.paste_masks import FaceMasker
from slimfuse.processors.mask_types import area_mask, box_mask, crop_masks, mesh_mask
from slimfuse.processors.occlusion import Occluder, OccluderOptions
from slimfuse.config import DEFAULT_REGIONS, MaskOptions, padding_from
from slimfuse.errors import UsageError
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.models.neural.masks import REGIONS
from slimfuse.processors.parsing import FaceParser, ParserOptions

class Counting:
    """A session that records the batch size of every run."""

    def __init__(self, session) -> None:  # type: ignore[no-untyped-def]
        self.session = session
        self.batches: list[int] = []

    def get_inputs(self):  # type: ignore[no-untyped-def]
        return self.session.get_inputs()

    def run(self, names, feeds):  # type: ignore[no-untyped-def]
        self.batches.append(len(next(iter(feeds.values()))))
        return self.session.run(names, feeds)


def _occluder(tmp_path: Path, batch: int | str = "batch"):  # type: ignore[no-untyped-def]
    """xseg_1's tensors; returns channel 2 of its BGR input, the crop's red / 255."""
    return nm.session_of(nm.occluder("xseg_1", batch), tmp_path, f"xseg_1-{batch}")


def _parser(tmp_path: Path):  # type: ignore[no-untyped-def]
    """bisenet_resnet_34's tensors; logits -(class - c)^2 with class = red / 10 read back from the input."""
    return nm.session_of(nm.face_parser("bisenet_resnet_34"), tmp_path, "bisenet_resnet_34")


def _face_crop(photo: np.ndarray, size: int) -> np.ndarray:
    """A square crop of the photo's face (an aligned crop's stand-in), `size` pixels."""
    height, width = photo.shape[:2]
    side = min(height, width)
    square = photo[(height - side) // 2:(height + side) // 2, (width - side) // 2:(width + side) // 2]
    return cv2.resize(square, (size, size), interpolation=cv2.INTER_AREA)


def _class_map(size: int, seed: int) -> np.ndarray:
    """Blocks of random classes 0..18, 32 px each at 512."""
    block = size // 16
    return np.kron(np.random.default_rng(seed).integers(0, 19, (16, 16)), np.ones((block, block))).astype(np.uint8)


def test_occluder_masks_are_the_models_mask_at_each_crops_size(tmp_path: Path, grace_hopper: np.ndarray,
                                                              astronaut: np.ndarray) -> None:
    crops = [_face_crop(grace_hopper, 256), _face_crop(astronaut, 256), _face_crop(grace_hopper, 256)]
    visible = []
    for index, crop in enumerate(crops):  # the "visible face": a rectangle in the red channel
        known = np.zeros((256, 256), np.uint8)
        known[40 + 10 * index:200, 60:190 - 20 * index] = 255
        crop[..., 0] = known
        visible.append(known.astype(np.float32) / 255)
    for batch, runs in (("batch", [2, 1]), (1, [1, 1, 1])):  # a free batch axis runs in batches, a fixed one not
        session = Counting(_occluder(tmp_path, batch))
        occluder = Occluder(session, OccluderOptions(batch_size=2, edge_sigma=0.0))  # type: ignore[arg-type]
        for mask, expected in zip(occluder.masks(crops), visible, strict=True):
            assert mask.dtype == np.float32 and mask.shape == (256, 256)
            np.testing.assert_array_equal(mask, expected)
        assert session.batches == runs
    soft = Occluder(_occluder(tmp_path), OccluderOptions()).masks([_face_crop(astronaut, 512)
                                                                   * np.uint8(0) + np.uint8(255)])[0]
    # all visible stays all visible at any size (up to the float rounding of the resize and blur, which differs
    # with the CPU's vector paths)
    assert soft.shape == (512, 512) and soft.min() >= 1.0 - 1e-5


def test_soft_occlusion_edges_stay_inside_the_visible_area(tmp_path: Path, astronaut: np.ndarray) -> None:
    crop = _face_crop(astronaut, 384)
    crop[..., 0] = 0
    crop[96:288, 96:288, 0] = 255
    mask = Occluder(_occluder(tmp_path), OccluderOptions()).masks([crop])[0]
    assert mask[192, 192] == pytest.approx(1.0, abs=1e-5) and mask[:90].max() == 0.0 and mask[:, :90].max() == 0.0
    assert 0.0 < mask[100, 192] < 1.0  # a soft edge just inside the rectangle


def test_region_mask_selects_exactly_the_chosen_classes(tmp_path: Path, grace_hopper: np.ndarray,
                                                         astronaut: np.ndarray) -> None:
    session = _parser(tmp_path)
    crops, maps = [], []
    for seed, photo in enumerate((grace_hopper, astronaut, astronaut)):
        crop, classes = _face_crop(photo, 512), _class_map(512, seed)
        crop[..., 0] = classes * 10
        crops.append(crop)
        maps.append(classes)
    regions = ("skin", "nose", "upper-lip", "lower-lip", "left-ear", "neck")
    counting = Counting(session)
    parser = FaceParser(counting, ParserOptions(regions=regions, batch_size=2, edge_sigma=0.0))  # type: ignore[arg-type]
    for found, classes in zip(parser.classes(crops), maps, strict=True):
        np.testing.assert_array_equal(found, classes)
    assert counting.batches == [2, 1]
    chosen = [REGIONS[name] for name in regions]
    for mask, classes in zip(parser.masks(crops), maps, strict=True):
        np.testing.assert_array_equal(mask, np.isin(classes, chosen).astype(np.float32))


def test_region_mask_at_another_crop_size(tmp_path: Path, astronaut: np.ndarray) -> None:
    crop = _face_crop(astronaut, 256)
    crop[..., 0] = 0  # background everywhere but a block of skin
    crop[64:192, 64:192, 0] = 10
    mask = FaceParser(_parser(tmp_path), ParserOptions(regions=("skin",))).masks([crop])[0]
    # Fully on inside (0.9999999 where OpenCV runs without its AVX/SSE4 paths), exactly off outside.
    assert mask.shape == (256, 256) and mask[128, 128] == pytest.approx(1.0, abs=1e-5) and mask[:56].max() == 0.0
    eyes_only = FaceParser(_parser(tmp_path), ParserOptions(regions=("left-eye", "right-eye"))).masks([crop])[0]
    assert eyes_only.max() == 0.0


def test_box_mask_in_facefusions_sense() -> None:
    hard = box_mask(100, 100, 0.0)
    assert hard[0].max() == 0.0 and hard[1:-1, 1:-1].min() == 1.0  # no blur: only the outermost pixel goes
    padded = box_mask(200, 200, 0.0, (10, 0, 25, 5))
    rows, cols = np.nonzero(padded)
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (20, 149, 10, 198)
    soft = box_mask(256, 256, 0.3)
    assert soft[128, 128] == pytest.approx(1.0, abs=1e-5) and soft[0].max() == 0.0 and soft[:, -1].max() == 0.0
    assert 0.0 < soft[128, 19] < 0.5 < soft[128, 40] < 1.0  # a ramp over about the blur's width
    assert padding_from([5]) == (5, 5, 5, 5) and padding_from([1, 2]) == (1, 2, 1, 2)
    assert padding_from([1, 2, 3]) == (1, 2, 3, 2) and padding_from([1, 2, 3, 4]) == (1, 2, 3, 4)


def test_selected_masks_combine_as_their_minimum(tmp_path: Path, astronaut: np.ndarray) -> None:
    crops = [_face_crop(astronaut, 512), _face_crop(astronaut[:, ::-1], 512)]
    for index, crop in enumerate(crops):
        crop[..., 0] = _class_map(512, index) * 10
    occluder = Occluder(_occluder(tmp_path))
    parser = FaceParser(_parser(tmp_path), ParserOptions(regions=DEFAULT_REGIONS))
    meshes = [np.linspace(0, 1, 512 * 512, dtype=np.float32).reshape(512, 512) ** (index + 1)
              for index in range(len(crops))]
    options = MaskOptions(face_mask_types=("box", "mesh", "occlusion", "region"), face_mask_blur=0.2,
                          face_mask_padding=(5, 0, 0, 10))
    combined = crop_masks(crops, options, occluder=occluder, parser=parser, mesh=meshes)
    boxes = [box_mask(512, 512, 0.2, (5, 0, 0, 10))] * 2
    expected = np.minimum.reduce([np.array(boxes), np.array(meshes), np.array(occluder.masks(crops)),
                                  np.array(parser.masks(crops))])
    np.testing.assert_array_equal(np.array(combined), expected)
    only_box = crop_masks(crops, MaskOptions(face_mask_types=("box",), face_mask_blur=0.2,
                                             face_mask_padding=(5, 0, 0, 10)))
    np.testing.assert_array_equal(only_box[0], boxes[0])
    assert all(m.min() == 1.0 for m in crop_masks(crops, MaskOptions(face_mask_types=(), face_mask_blur=0.3)))
    with pytest.raises(ValueError, match="occlusion"):
        crop_masks(crops, MaskOptions(face_mask_types=("occlusion",), face_mask_blur=0.3))


def test_mesh_mask_covers_the_face_oval(pool: ModelPool, astronaut: np.ndarray) -> None:
    topology = MeshTopology.from_json(pool.store.path("face_mesh_topology").read_text(encoding="utf-8"))
    landmarks = FaceAnalyser(pool).faces(astronaut)[0].landmarks
    assert landmarks is not None
    mask = mesh_mask(landmarks, topology.face_oval, *astronaut.shape[:2])
    nose = np.round(landmarks[1, :2]).astype(int)
    assert mask.shape == astronaut.shape[:2] and mask[nose[1], nose[0]] == 1.0
    assert mask[0, 0] == 0.0 and mask[-1, -1] == 0.0 and 0.005 < mask.mean() < 0.2


def test_area_masks_cover_the_parts_they_name(pool: ModelPool, astronaut: np.ndarray) -> None:
    landmarks = FaceAnalyser(pool).faces(astronaut)[0].landmarks
    assert landmarks is not None
    matrix = align_matrix(five_points(landmarks), "arcface_128", 256)
    crop = FaceCrop(warp_to_crop(astronaut, matrix, 256), landmarks_in_crop(landmarks, matrix), matrix)

    def area(*names: str) -> np.ndarray:  # the run's masker with only the area type selected
        return FaceMasker(pool, MaskOptions(face_mask_types=("area",), face_mask_areas=names), None).masks([crop])[0]

    def at(mask: np.ndarray, vertex: int) -> float:  # the mask at a FaceMesh vertex
        x, y = np.round(crop.landmarks[vertex, :2]).astype(int)
        return float(mask[y, x])

    lower_lid, nose_tip, lips, chin, forehead = 145, 1, 13, 152, 10
    upper, lower, mouth = area("upper-face"), area("lower-face"), area("mouth")
    assert at(upper, lower_lid) == 1.0 and at(upper, lips) == 0.0 and at(upper, forehead) == 0.0
    assert at(lower, lips) == 1.0 and at(lower, lower_lid) == 0.0 and at(lower, chin) < 1.0  # softened inwards
    assert at(mouth, lips) > 0.5 and mouth.max() > 0.9 and at(mouth, nose_tip) == 0.0 and mouth.sum() < lower.sum() / 4
    both = area("upper-face", "lower-face")
    assert at(both, nose_tip) == 1.0 and (both >= np.maximum(upper, lower) - 1e-6).all()  # one hull, no seam
    np.testing.assert_array_equal(area_mask(landmarks_68(crop.landmarks), 256, 256, ("mouth",), 5.0), mouth)
    assert area().max() == 0.0
    with pytest.raises(UsageError, match="--face-mask-areas: invalid choice: 'cheek'"):
        MaskOptions(face_mask_areas=("cheek",))


def test_the_runs_masker_takes_its_models_from_the_pool(tmp_path: Path, store: Store, pool: ModelPool,
                                                         astronaut: np.ndarray) -> None:
    placed = tmp_path / "placed"
    visible = np.zeros((256, 256), np.float32)
    visible[:, 64:] = 1.0
    nm.save(nm.occluder("xseg_2", visible=visible), placed, "xseg_2")
    nm.save(nm.face_parser("bisenet_resnet_18"), placed, "bisenet_resnet_18")
    neural_pool = ModelPool(nm.isolated_store(tmp_path / "home", store, placed))
    topology = MeshTopology.from_json(pool.store.path("face_mesh_topology").read_text(encoding="utf-8"))
    face = FaceAnalyser(pool).faces(astronaut)[0]
    processor = make_swapper(neural_pool, "inswapper_128")
    crops = [processor.crop(astronaut, face)]
    crops[0].image[..., 0] = _class_map(128, 1) * 10  # the parser's classes
    regions = ("skin", "nose", "hair", "neck", "cloth", "hat", "mouth", "left-eye")
    options = MaskOptions(face_mask_types=("box", "mesh", "occlusion", "region"), face_mask_blur=0.2,
                          face_mask_padding=(0, 10, 0, 0), face_occluder_model="xseg_2",
                          face_parser_model="bisenet_resnet_18", face_mask_regions=regions)
    masker = FaceMasker(neural_pool, options, topology.face_oval)
    parts = [box_mask(128, 128, 0.2, (0, 10, 0, 0)), mesh_mask(crops[0].landmarks, topology.face_oval, 128, 128),
             Occluder(neural_pool.session("xseg_2")).masks([crops[0].image])[0],
             FaceParser(neural_pool.session("bisenet_resnet_18"),
                        ParserOptions(regions=regions)).masks([crops[0].image])[0]]
    combined = masker.masks(crops)[0]
    np.testing.assert_array_equal(combined, np.minimum.reduce(parts))
    assert combined.max() > 0.9 and all((combined < part).any() for part in parts)  # each part takes some away
    enhancer = masker.for_enhancer()  # FaceFusion's enhancer mask: box (no padding) and occlusion, never region
    assert enhancer.options.face_mask_types == ("box", "occlusion")
    assert FaceMasker.models_for(enhancer.options) == ("xseg_2",)
    assert enhancer.options.face_mask_padding == (0, 0, 0, 0)
    with pytest.raises(ValueError, match="oval"):
        FaceMasker(neural_pool, options, None)

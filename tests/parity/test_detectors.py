"""The neural face detectors against FaceFusion 3.8.1's recorded outputs (tests/parity/reference/detectors), on the
parity stand-ins (strided random convolutions with FaceFusion's tensor contracts) loaded through slimfuse's store.

Per detector, photo (the astronaut; Grace Hopper's portrait, not square) and size (640, FaceFusion's default; 320 for
SCRFD and RetinaFace, where both shrink the photos), stage by stage: the tensor fed to the model; the faces decoded
from FaceFusion's raw outputs (before NMS); the suppression on FaceFusion's decoded faces; slimfuse's whole pass of
one image on FaceFusion's raw outputs; then slimfuse's own pass, the stand-in run by slimfuse. What differs on
purpose: slimfuse's boxes are clipped to the image (a Face lies within its image), FaceFusion's are not.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from parity import standins
from parity.reference import FOLDER, MAX_PIXELS, Figures, recorded, standin_pool
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.blazeface import DetectorOptions
from slimfuse.faces.geometry import nms
from slimfuse.faces.neural_detect import Decoded, NeuralFaceDetector, letterbox
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store

AREA = "detectors"
CATALOG = {"scrfd": "scrfd_2.5g", "retinaface": "retinaface_10g", "yolo_face": "yolo_face", "yunet": "yunet"}
"""FaceFusion's detector names and slimfuse's."""
SCORES = 1e-4
CASES = sorted(tuple(path.stem.rsplit("_", 1)) for path in (FOLDER / "reference" / AREA).glob("*.npz")
               if not path.stem.startswith("restricted_"))
"""(FaceFusion's model and the photo, the size) of every recording."""


def split(case: tuple[str, str]) -> tuple[str, str, int]:
    name, size = case
    model = next(model for model in CATALOG if name.startswith(model + "_"))
    return model, name[len(model) + 1:], int(size)


def case_id(case: tuple[str, str]) -> str:
    return "-".join(case)


def pad_to(path: Path, size: int) -> None:
    """The ONNX file at `path` grown to exactly `size` bytes by an initializer no node reads (the catalog knows the
    published file's size and checks it)."""
    model = onnx.load(str(path))
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(0, np.uint8), "padding"))
    filler = model.graph.initializer[-1]
    length = size - model.ByteSize()
    while model.ByteSize() != size:  # the lengths' own encodings grow with them: a few rounds settle
        filler.dims[:] = [length]
        filler.raw_data = bytes(length)
        length -= model.ByteSize() - size
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("parity_detectors")
    for contract in standins.DETECTORS:
        path = standins.write(contract.name, root / "placed")
        spec = next(spec for spec in store.catalog.models if spec.filename == path.name)
        if spec.size is not None:
            pad_to(path, spec.size)
    return standin_pool(root, store, ())


class Replay:
    """A session that gives fixed outputs."""

    def __init__(self, outputs: list[np.ndarray]) -> None:
        self.outputs = outputs

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [output.copy() for output in self.outputs]


def detector(pool: ModelPool, model: str, size: int, session: Any = None) -> NeuralFaceDetector:
    """slimfuse's detector as a run builds it (FaceAnalyser), at `size`, on `session` (default: the stand-in)."""
    built = FaceAnalyser(pool, DetectorOptions(model=CATALOG[model])).detector()
    assert isinstance(built, NeuralFaceDetector)
    return NeuralFaceDetector(session or built.session, replace(built.spec, size=size), built.options)


def raw_outputs(reference: dict[str, np.ndarray]) -> list[np.ndarray]:
    """FaceFusion's raw outputs as recorded: its values at every anchor scoring 0.2 or more, 0 elsewhere."""
    axis, outputs = int(reference["raw_axis"]), []
    for index in range(sum(1 for key in reference if key.endswith("_shape") and key.startswith("raw_"))):
        output = np.zeros(tuple(reference[f"raw_{index}_shape"]), dtype=np.float32)
        where: list[Any] = [slice(None)] * output.ndim
        where[axis] = reference[f"raw_{index}_index"]
        output[tuple(where)] = reference[f"raw_{index}"]
        outputs.append(output)
    return outputs


def facefusion_kept(reference: dict[str, np.ndarray]) -> Decoded:
    keep = reference["keep"]
    return reference["boxes"][keep], reference["points"][keep], reference["scores"][keep]


def compare(figures: Figures, model: str, stage: str, ours: Decoded, theirs: Decoded) -> None:
    """Boxes and points within MAX_PIXELS, scores within SCORES, face by face in the same order."""
    assert len(ours[2]) == len(theirs[2]), f"{model} {stage}: {len(ours[2])} faces, FaceFusion {len(theirs[2])}"
    geometry = [np.concatenate([np.ravel(boxes), np.ravel(points)]) for boxes, points, _ in (ours, theirs)]
    figures.within(AREA, model, f"{stage}: {len(ours[2])} boxes and five points", *geometry, MAX_PIXELS, "px")
    figures.within(AREA, model, f"{stage}: their scores", ours[2], theirs[2], SCORES, "")


def test_every_detector_is_recorded_on_both_photos() -> None:
    recorded_cases = {split(case) for case in CASES}
    expected = {(model, photo, 640) for model in CATALOG for photo in ("astronaut", "grace_hopper")}
    expected |= {(model, photo, 320) for model in ("scrfd", "retinaface") for photo in ("astronaut", "grace_hopper")}
    assert recorded_cases == expected


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_input_tensor(parity_pool: ModelPool, case: tuple[str, str], request: pytest.FixtureRequest,
                      figures: Figures) -> None:
    model, photo, size = split(case)
    reference = recorded(AREA, "_".join(case))
    image = request.getfixturevalue(photo)
    spec = detector(parity_pool, model, size).spec
    tensor, _ = letterbox(image, spec)
    assert tensor.shape == tuple(reference["input_shape"])
    step = tensor.shape[2] // reference["input_sample"].shape[2]
    figures.within(AREA, model, f"{photo} {size} px: input tensor, every {step}th pixel",
                   tensor[:, :, ::step, ::step], reference["input_sample"], 1e-6, "")
    # the whole picture in it: the photo, or the photo as FaceFusion shrank it
    height, width = reference["restricted_shape"]
    picture = np.rint(tensor[0].transpose(1, 2, 0) * np.float32(spec.divisor) + np.float32(spec.offset))
    if spec.bgr:
        picture = picture[:, :, ::-1]
    shrunk = f"restricted_{photo}_{size}"
    expected = recorded(AREA, shrunk)["restricted"] if (FOLDER / "reference" / AREA / f"{shrunk}.npz").is_file() \
        else image
    figures.image(AREA, model, f"{photo} {size} px: the picture in the input", picture[:height, :width], expected)
    assert not picture[height:].any() and not picture[:, width:].any()  # black below it and to its right


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_decoding(parity_pool: ModelPool, case: tuple[str, str], request: pytest.FixtureRequest,
                  figures: Figures) -> None:
    model, photo, size = split(case)
    reference = recorded(AREA, "_".join(case))
    found = detector(parity_pool, model, size)
    _, ratio = letterbox(request.getfixturevalue(photo), found.spec)
    decoded = found.decode(raw_outputs(reference), ratio)
    compare(figures, model, f"{photo} {size} px: decoded, before NMS", decoded,
            (reference["boxes"], reference["points"], reference["scores"]))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_suppression(parity_pool: ModelPool, case: tuple[str, str]) -> None:
    reference = recorded(AREA, "_".join(case))
    assert len(reference["keep"]) < len(reference["scores"])  # there were overlaps to settle
    options = detector(parity_pool, split(case)[0], split(case)[2]).options
    np.testing.assert_array_equal(nms(reference["boxes"], reference["scores"], options.nms_iou), reference["keep"])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_one_image_on_facefusions_outputs(parity_pool: ModelPool, case: tuple[str, str],
                                          request: pytest.FixtureRequest, figures: Figures) -> None:
    model, photo, size = split(case)
    reference = recorded(AREA, "_".join(case))
    found = detector(parity_pool, model, size, Replay(raw_outputs(reference)))
    compare(figures, model, f"{photo} {size} px: faces kept", found.run(request.getfixturevalue(photo)),
            facefusion_kept(reference))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_chained(parity_pool: ModelPool, case: tuple[str, str], request: pytest.FixtureRequest,
                 figures: Figures) -> None:
    """slimfuse's own detections (its input, the stand-in run by slimfuse, its decoding and suppression, the
    boxes clipped to the image) against FaceFusion's faces, their boxes clipped the same way."""
    model, photo, size = split(case)
    reference = recorded(AREA, "_".join(case))
    image = request.getfixturevalue(photo)
    found = detector(parity_pool, model, size)
    detections = sorted(found.detections(image), key=lambda d: -d.score)
    boxes, points, scores = facefusion_kept(reference)
    height, width = image.shape[:2]
    clipped = np.clip(boxes, 0, [width, height, width, height])
    ours = (np.array([d.box for d in detections]).reshape(-1, 4), np.array([d.points for d in detections]),
            np.array([d.score for d in detections]))
    compare(figures, model, f"{photo} {size} px: chained", ours, (clipped, points, scores))

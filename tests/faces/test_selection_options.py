"""FaceFusion's selection options through the real pipeline, on a row of three faces built from the packaged photos:
the astronaut (left), Grace Hopper with her red and blue channels swapped (middle), Grace Hopper (right). The
fairface stand-in (tests/neural_models.py) tells a face by its red-blue balance: the two natural faces are male,
asian, 20-28; the blue one female, indian, 60-68. Each test reads which faces the output changed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import neural_models as nm
from scenes import place, swap_image
from slimfuse.cli.main import main
from slimfuse.errors import NoTargetFaceError
from slimfuse.faces.classify import FaceClasses, classes_of
from slimfuse.models import download as download_module
from slimfuse.models.download import SourceFailed
from slimfuse.samples import ASTRONAUT_FACE, GRACE_HOPPER_FACE

LEFT, MIDDLE, RIGHT = 0, 1, 2
CHANGED = 0.5
"""Mean grey levels a swapped face's box differs by at least: an untouched face is the same to the bit, and even the
astronaut swapped onto herself differs by a grey level."""


@pytest.fixture(scope="module")
def row(astronaut: np.ndarray, grace_hopper: np.ndarray) -> tuple[np.ndarray, list[tuple[float, ...]]]:
    canvas = np.full((400, 960, 3), 90, np.uint8)
    bluer = np.ascontiguousarray(grace_hopper[..., ::-1])
    boxes = [place(canvas, astronaut, ASTRONAUT_FACE, 130, (160, 200)),
             place(canvas, bluer, GRACE_HOPPER_FACE, 130, (480, 200)),
             place(canvas, grace_hopper, GRACE_HOPPER_FACE, 130, (800, 200))]
    return canvas, boxes


@pytest.fixture
def fairface(models_dir: Path) -> Path:
    nm.save(nm.fairface_by_tint(), models_dir, "fairface")
    return models_dir


def swapped(tmp_path: Path, source: Path, row: tuple[np.ndarray, list[tuple[float, ...]]], **options: object) -> set[int]:
    """Which faces of the row the swap changed."""
    image, boxes = row
    result = swap_image(tmp_path, source, image, **options).astype(float)
    changed = set()
    for index, (x0, y0, x1, y1) in enumerate(boxes):
        area = (slice(int(y0), int(y1)), slice(int(x0), int(x1)))
        if np.abs(result[area] - image[area]).mean() > CHANGED:
            changed.add(index)
    return changed


@pytest.mark.parametrize(("order", "position", "face"), [
    ("left-right", 0, LEFT), ("right-left", 0, RIGHT), ("left-right", 1, MIDDLE), ("right-left", 2, LEFT),
    ("best-worst", 0, RIGHT), ("worst-best", 0, MIDDLE),
])
def test_the_order_picks_the_face_in_one_and_reference_mode(tmp_path: Path, astronaut_path: Path, row, order: str,
                                                            position: int, face: int) -> None:
    """`one` takes the first face in the order; the reference face is the one at the position in that order (and
    is then every face that looks like it: the two Grace Hoppers match each other, not the astronaut)."""
    if position == 0:
        assert swapped(tmp_path, astronaut_path, row, face_selector_order=order) == {face}
    picked = swapped(tmp_path, astronaut_path, row, face_selector_order=order, face_selector_mode="reference",
                     reference_face_position=position, reference_face_distance=0.45)
    assert face in picked and (picked == {LEFT} if face == LEFT else LEFT not in picked)


def test_the_largest_face_comes_first_unless_the_order_says_otherwise(tmp_path: Path, astronaut_path: Path,
                                                                      astronaut: np.ndarray,
                                                                      grace_hopper: np.ndarray) -> None:
    canvas = np.full((400, 960, 3), 90, np.uint8)
    small = place(canvas, astronaut, ASTRONAUT_FACE, 90, (200, 200))
    large = place(canvas, grace_hopper, GRACE_HOPPER_FACE, 170, (700, 200))
    scene = (canvas, [small, large])
    assert swapped(tmp_path, astronaut_path, scene) == {1}
    assert swapped(tmp_path, astronaut_path, scene, face_selector_order="small-large") == {0}
    assert swapped(tmp_path, astronaut_path, scene, face_selector_order="large-small") == {1}


@pytest.mark.parametrize(("options", "faces"), [
    ({"face_selector_gender": "female"}, {MIDDLE}),
    ({"face_selector_gender": "male"}, {LEFT, RIGHT}),
    ({"face_selector_race": "asian"}, {LEFT, RIGHT}),
    ({"face_selector_race": "indian"}, {MIDDLE}),
    ({"face_selector_race": "white"}, set()),
    ({"face_selector_age_start": 60}, {MIDDLE}),
    ({"face_selector_age_end": 30}, {LEFT, RIGHT}),
    ({"face_selector_age_start": 29, "face_selector_age_end": 60}, set()),
    ({"face_selector_gender": "auto"}, {LEFT, RIGHT}),  # the astronaut source is taken for male
])
def test_many_mode_swaps_only_the_faces_the_classifier_keeps(tmp_path: Path, astronaut_path: Path, row, fairface: Path,
                                                             options: dict[str, object], faces: set[int]) -> None:
    if not faces:
        with pytest.raises(NoTargetFaceError):
            swapped(tmp_path, astronaut_path, row, face_selector_mode="many", models_dir=fairface, **options)
        return
    assert swapped(tmp_path, astronaut_path, row, face_selector_mode="many", models_dir=fairface, **options) == faces


def test_one_mode_takes_the_first_kept_face_in_the_order(tmp_path: Path, astronaut_path: Path, row,
                                                         fairface: Path) -> None:
    assert swapped(tmp_path, astronaut_path, row, face_selector_gender="male", face_selector_order="right-left",
                   models_dir=fairface) == {RIGHT}
    assert swapped(tmp_path, astronaut_path, row, face_selector_gender="male", face_selector_order="left-right",
                   models_dir=fairface) == {LEFT}


def test_auto_takes_the_source_faces_class(tmp_path: Path, grace_hopper: np.ndarray, row, fairface: Path) -> None:
    from PIL import Image

    bluer = tmp_path / "bluer.png"
    Image.fromarray(np.ascontiguousarray(grace_hopper[..., ::-1])).save(bluer)
    assert swapped(tmp_path, bluer, row, face_selector_mode="many", face_selector_race="auto",
                   models_dir=fairface) == {MIDDLE}


def test_an_age_range_that_ends_before_it_starts_is_a_usage_error(tmp_path: Path, astronaut_path: Path,
                                                                  grace_hopper_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(tmp_path / "out.png"),
                 "--face-selector-age-start", "40", "--face-selector-age-end", "30"])
    assert code == 2 and "--face-selector-age-end: must be more than --face-selector-age-start, got 30" in \
        capsys.readouterr().err


def test_a_class_filter_without_the_classifier_names_the_missing_model(tmp_path: Path, models_dir: Path,
                                                                       astronaut_path: Path, grace_hopper_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    def offline(url: str, *args: object, **kwargs: object) -> None:
        raise SourceFailed("network unreachable")

    monkeypatch.setattr(download_module, "resumable_download", offline)
    output = tmp_path / "out.png"
    code = main(["swap", "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(output),
                 "--models-dir", str(models_dir), "--face-selector-gender", "female"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 14 and len(err) == 1 and "Place fairface.onnx in a folder and pass --models-dir" in err[0]
    assert not output.exists()


@pytest.mark.parametrize(("ids", "gender", "race", "ages"), [
    ((0, 0, 0), "male", "white", range(0, 2)), ((1, 1, 1), "female", "black", range(3, 9)),
    ((2, 0, 3), "male", "latino", range(20, 29)), ((3, 1, 5), "female", "asian", range(40, 49)),
    ((4, 0, 7), "male", "asian", range(60, 69)), ((5, 0, 8), "male", "indian", range(70, 100)),
    ((6, 2, 9), "male", "arabic", range(70, 100)), ((7, 1, 2), "female", "white", range(10, 19)),
])
def test_the_class_indices_read_as_facefusion_reads_them(ids: tuple[int, int, int], gender: str, race: str,
                                                         ages: range) -> None:
    """FaceFusion's categorize_*: gender 1 is female, any other male; races 3 and 4 are both asian, an unknown one
    white; age groups end a year early (its ranges), an unknown one is the oldest."""
    assert classes_of(*ids) == FaceClasses(gender=gender, race=race, age=ages)

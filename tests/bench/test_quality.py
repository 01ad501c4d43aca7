"""`slimfuse bench quality`: its judge (dlib, not the swapper's landmarks) and the goals the mesh swap meets."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from slimfuse.bench import quality
from slimfuse.models.store import Store


@pytest.fixture(scope="module")
def bench(store: Store) -> quality.QualityBench:
    return quality.QualityBench(store)


@pytest.fixture(scope="module")
def results(bench: quality.QualityBench) -> quality.Results:
    return bench.run(("self", "cross", "grey", "mouth"))


def test_judge_uses_dlib_box_and_detail(bench: quality.QualityBench) -> None:
    photo = bench.photos["grace_hopper"]
    x0, y0, x1, y1 = bench.judge.box(photo)
    assert 150 < x0 < x1 < 390 and 110 < y0 < y1 < 360  # the face, found by dlib's HOG detector
    blurred = np.asarray(Image.fromarray(photo).resize((256, 300)).resize((512, 600)))
    assert quality.detail(blurred, (x0, y0, x1, y1)) < 0.5 * quality.detail(photo, (x0, y0, x1, y1))
    assert bench.judge.distance(photo, photo) < 1e-6
    assert bench.judge.distance(photo, bench.photos["astronaut"]) > 0.6


def test_variations(bench: quality.QualityBench) -> None:
    photo = bench.photos["astronaut"]
    box = bench.judge.box(photo)
    grey = quality.grey_face(photo, box)
    assert quality.face_chroma(grey, box) == 0 and quality.chroma(grey)[-5:, -5:].max() >= 0
    glasses, rims = quality.draw_glasses(photo, bench.judge.eyes(photo), box)
    assert 200 < rims.sum() < 0.2 * rims.size and glasses[rims].mean() < 60
    near = cv2.dilate(rims.astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    assert np.array_equal(glasses[~near], photo[~near])  # only the rims are drawn


def test_self_swap_keeps_detail(results: quality.Results) -> None:
    for name in ("grace_hopper", "astronaut"):
        assert results.get(f"{name} onto itself", "detail kept") >= 0.9
        assert results.get(f"{name} onto itself", "face PSNR dB") >= 40
        assert results.get(f"{name} mirrored onto itself", "detail kept") >= 0.6


@pytest.mark.parametrize("source,target", quality.PAIRS)
def test_cross_swap_identity_colour_and_mouth(results: quality.Results, source: str, target: str) -> None:
    case = f"{source} -> {target}"
    to_source = results.get(case, "identity: to source")
    assert to_source <= 0.45 and to_source < results.get(case, "identity: to target")
    assert results.get(case + " --blend poisson", "identity: to source") <= to_source + 0.02
    assert results.get(case, "chroma excess") <= 0
    assert [f.ok for f in results.figures if f.case == case and f.name == "magenta share"] == [True]
    # goal 0.005; onto grace_hopper her own red lid rims and glasses still count (about 0.01): a guard for now
    assert results.get(case, "stray pixels at the eyes") <= 0.02
    assert results.get(case + " --keep-eyes", "stray pixels at the eyes") <= 0.02
    assert [f.ok for f in results.figures if f.case == case and f.name.startswith("mouth opening")] == [True]
    if source == "grace_hopper":  # a wrinkled source on a smooth face: her fine detail is damped to the target's
        assert 0.5 <= results.get(case, "border step (in/out)") <= 2.0


def test_grey_face_stays_grey(results: quality.Results) -> None:
    assert results.get("grace_hopper -> grey astronaut", "chroma in the face") <= 5


def test_crops_are_written(bench: quality.QualityBench, results: quality.Results, tmp_path: Path) -> None:
    paths = quality.write_crops(bench.crops[:2], tmp_path, ".png")
    assert len(paths) == 2
    for path in paths:
        img = np.asarray(Image.open(path))
        assert img.shape[0] == 200 and img.shape[1] > 4 * 150


def test_glasses_options_keep_the_target_rims_and_drop_the_source_rims(bench: quality.QualityBench) -> None:
    r = quality.Results()
    bench.glasses(r)
    case = "... with --keep-occluders --remove-source-glasses"
    assert r.get(case, "target's rims kept") >= 0.95
    assert r.get(case, "source rims in the output") <= 0.02  # goal 0.005: what is left follows the source's mesh
    assert r.get("astronaut -> grace_hopper with glasses", "target's rims kept") < 0.5  # by default swapped over

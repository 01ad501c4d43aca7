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
        assert results.get(f"{name} mirrored onto itself", "detail kept") >= 0.9


@pytest.mark.parametrize("source,target", quality.PAIRS)
def test_cross_swap_identity_colour_and_mouth(results: quality.Results, source: str, target: str) -> None:
    case = f"{source} -> {target}"
    to_source = results.get(case, "identity: to source")
    goal, _ = quality.identity_goal(source)  # 0.45; 0.50 for the glasses source, her frames left out
    assert to_source <= goal and to_source < results.get(case, "identity: to target")
    if source == quality.GLASSES_SOURCE:  # with her frames, as before they were left out by default
        assert results.get(case + " --no-remove-source-glasses", "identity: to source") <= quality.IDENTITY_GOAL
    assert results.get(case + " --blend poisson", "identity: to source") <= to_source + quality.POISSON_MARGIN
    assert results.get(case, "chroma excess") <= 0
    assert [f.ok for f in results.figures if f.case == case and f.name == "magenta share"] == [True]
    # goal 0.005, met at 0.0047-0.0049 onto grace_hopper (her own red lid rims and frames count): a margin here
    assert results.get(case, "stray pixels at the eyes") <= 0.0075
    assert results.get(case + " --keep-eyes", "stray pixels at the eyes") <= 0.0075
    assert [f.ok for f in results.figures if f.case == case and f.name.startswith("mouth opening")] == [True]
    assert results.get(case, "detail kept") >= 0.25
    # goal 0.5-2: a wrinkled source on a smooth face is damped to the target's detail (0.85), a smaller source
    # topped up with the target's texture at the border (0.53)
    assert 0.45 <= results.get(case, "border step (in/out)") <= 2.0


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
    assert r.get("astronaut -> grace_hopper with glasses, --keep-occluders", "target's rims kept") >= 0.95
    # the source's frames stay out by default, and come along when asked
    assert r.get("astronaut with glasses -> grace_hopper, default", "source rims in the output") <= 0.005
    assert r.get("astronaut with glasses -> grace_hopper, --no-remove-source-glasses",
                 "source rims in the output") > 0.05
    # by default the target's rims are swapped over
    assert r.get("astronaut -> grace_hopper with glasses, default", "target's rims kept") < 0.5
    kept = "astronaut -> grace_hopper, --keep-occluders (her own glasses in front)"
    assert [f.ok for f in r.figures if f.case == kept] == [True]  # still nearer the source than the target


def test_a_webcam_size_face_is_the_source(bench: quality.QualityBench) -> None:
    r = quality.Results()
    bench.live_size(r)
    for source, target in quality.PAIRS:
        case = f"{source} -> {target} at 150 px, JPEG"
        to_source = r.get(case, "identity: to source")
        goal, _ = quality.identity_goal(source)
        assert to_source <= goal + 0.02 and to_source + 0.1 < r.get(case, "identity: to target")  # a margin

"""The face debugger (--processors face_swapper face_debugger) on the packaged photos and clips made from them: the
box, the points and the tag are drawn where the face is, in their colours, only when it is listed; on a video the
tag is on every frame, and it tells reused results from generated ones."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scenes import frame_loop, swap_image
from slimfuse.bench.clips import make_clip, pan, still
from slimfuse.cli.main import main
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.faces.types import Face
from slimfuse.media.video_reader import VideoReader
from slimfuse.models.pool import ModelPool
from slimfuse.processors.debug import BOX, DETECTOR_POINTS, FIELD, GENERATED, MESH_POINTS, REUSED, TEXT, line_scale

DEBUGGER = ("face_swapper", "face_debugger")


def _share(pixels: np.ndarray, colour: tuple[int, int, int], tolerance: int = 0) -> float:
    """The share of `pixels` (N, 3) within `tolerance` grey levels of `colour` on every channel."""
    close = np.all(np.abs(pixels.astype(np.int32) - np.array(colour)) <= tolerance, axis=-1)
    return float(close.mean())


def _left_edge(image: np.ndarray, face: Face, shift: int = 0) -> np.ndarray:
    """The column of the box's left edge (`shift` pixels to the right), less its corners."""
    x0, y0, _, y1 = np.rint(face.box).astype(int)
    return image[y0 + 8:y1 - 8, x0 + shift]


def _tag_square(image: np.ndarray, face: Face) -> np.ndarray:
    """The middle pixel of the reuse square above the box."""
    side, width = 6 * line_scale(image.shape[0]), line_scale(image.shape[0])
    x0, y0 = np.rint(face.box[:2]).astype(int)
    return image[y0 - 2 * width - side // 2, x0 + side // 2]


def _tag_text(image: np.ndarray, face: Face, tolerance: int = 40) -> bool:
    """Whether right of the reuse square there is white writing (the track id and the score) on a dark field."""
    side, width = 6 * line_scale(image.shape[0]), line_scale(image.shape[0])
    x0, y0 = np.rint(face.box[:2]).astype(int)
    field = image[y0 - 2 * width - side:y0 - 2 * width, x0 + side + width:x0 + side + 20 * width].reshape(-1, 3)
    return _share(field, FIELD, tolerance) > 0.4 and _share(field, TEXT, tolerance) > 0.05


def test_an_image_swap_draws_the_box_the_points_and_the_tag_only_when_listed(
        pool: ModelPool, tmp_path: Path, grace_hopper_path: Path, astronaut: np.ndarray) -> None:
    face = FaceAnalyser(pool).faces(astronaut)[0]
    plain = swap_image(tmp_path, grace_hopper_path, astronaut)
    drawn = swap_image(tmp_path, grace_hopper_path, astronaut, processors=DEBUGGER,
                       face_debugger_items=("bounding-box", "face-landmark-68", "face-mask"))
    assert _share(_left_edge(drawn, face), BOX) > 0.9
    assert _share(_left_edge(plain, face), BOX) == 0.0
    points = np.rint(landmarks_68(face.landmarks)).astype(int)
    assert _share(drawn[points[:, 1], points[:, 0]], MESH_POINTS) > 0.8
    assert _share(plain[points[:, 1], points[:, 0]], MESH_POINTS) == 0.0
    assert tuple(_tag_square(drawn, face)) == GENERATED and _tag_text(drawn, face)
    assert not _tag_text(plain, face)
    # FaceFusion's default items: the mesh's five points and the mask, no box
    default = swap_image(tmp_path, grace_hopper_path, astronaut, processors=DEBUGGER)
    assert _share(_left_edge(default, face), BOX) == 0.0 and tuple(_tag_square(default, face)) == GENERATED
    changed = np.any(default != plain, axis=2)
    x0, y0, x1, y1 = np.rint(face.box).astype(int)
    assert changed.sum() > 200 and not changed[y1 + 60:].any()  # drawn around the face, nowhere else


def _found_tag(image: np.ndarray) -> tuple[int, int] | None:
    """The top-left corner of the one green square in `image` (the tag; its frame has no other green)."""
    side = 6 * line_scale(image.shape[0])
    ys, xs = np.nonzero(np.all(np.abs(image.astype(np.int32) - np.array(GENERATED)) <= 60, axis=2))
    if len(xs) < 0.6 * side * side or np.ptp(xs) > side + 2 or np.ptp(ys) > side + 2:
        return None
    return int(xs.min()), int(ys.min())


def test_a_video_gets_the_box_and_the_tag_on_every_frame(tmp_path: Path, grace_hopper: np.ndarray,
                                                         astronaut_path: Path) -> None:
    clip = make_clip(tmp_path / "pan.mp4", pan(grace_hopper, (1280, 720), 12), fps=25, crf=12)
    output = tmp_path / "out.mp4"
    assert main(["swap", "-s", str(astronaut_path), "-t", str(clip), "-o", str(output), "--quiet",
                 "--processors", *DEBUGGER, "--face-debugger-items", "bounding-box"]) == 0
    with VideoReader(clip) as originals, VideoReader(output) as outputs:
        pairs = [(original.rgb, result.rgb) for original, result in zip(originals, outputs, strict=True)]
    assert len(pairs) == 12
    width = line_scale(720)
    side = 6 * width
    places = []
    for number, (original, result) in enumerate(pairs):
        assert _found_tag(original) is None
        tag = _found_tag(result)
        assert tag is not None, number
        x, y = tag
        top = y + side + 2 * width  # the box's top edge, under the tag
        left_edge = result[top + 8:top + 100, x + width // 2]
        assert _share(left_edge, BOX, tolerance=60) > 0.9, number
        field = result[y:y + side, x + side + width:x + side + 20 * width].reshape(-1, 3)
        assert _share(field, FIELD, 40) > 0.4 and _share(field, TEXT, 40) > 0.05, number
        places.append(x)
    assert places[0] - places[-1] > 200  # the tag follows the face across the pan


def test_the_tag_tells_a_reused_face_from_a_generated_one(tmp_path: Path, grace_hopper: np.ndarray,
                                                          astronaut_path: Path) -> None:
    clip = make_clip(tmp_path / "still.mp4", still(grace_hopper, (640, 360), 12, face_px=160), crf=28)
    loop = frame_loop(astronaut_path, processors=DEBUGGER, reuse_threshold=4.0, reuse_max_frames=3)
    squares: dict[bool, set[tuple[int, ...]]] = {True: set(), False: set()}
    with VideoReader(clip) as reader:
        for frame in reader:
            before = loop.reuse.reused
            targets = loop.analyse(frame.rgb, frame.time)
            result = loop.render(frame.rgb, targets)
            assert [target.track_id for target in targets] == [0]
            squares[loop.reuse.reused > before].add(tuple(_tag_square(result, targets[0].face)))
    assert squares == {True: {REUSED}, False: {GENERATED}}


def test_the_detector_points_are_drawn_and_an_unknown_item_is_refused(
        pool: ModelPool, tmp_path: Path, grace_hopper_path: Path, astronaut: np.ndarray,
        capsys: pytest.CaptureFixture[str]) -> None:
    face = FaceAnalyser(pool).faces(astronaut)[0]
    drawn = swap_image(tmp_path, grace_hopper_path, astronaut, processors=DEBUGGER, face_debugger_items=("face-landmark-5",))
    points = np.rint(face.keypoints[:, :2]).astype(int)
    assert _share(drawn[points[:, 1], points[:, 0]], DETECTOR_POINTS) == 1.0
    mesh = np.rint(landmarks_68(face.landmarks)).astype(int)
    assert _share(drawn[mesh[:, 1], mesh[:, 0]], MESH_POINTS) == 0.0  # the mesh's points are not listed
    code = main(["swap", "-s", str(grace_hopper_path), "-t", str(tmp_path / "target.png"), "-o",
                 str(tmp_path / "again.png"), "--processors", *DEBUGGER, "--face-debugger-items", "face-landmark-3"])
    err = capsys.readouterr().err
    assert code == 2 and "--face-debugger-items" in err and "face-landmark-3" in err

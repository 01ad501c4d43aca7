"""`slimfuse bench quality --real-photos`: the judge finds every face of real group photos (and only faces), the
variants and the live-size frame are what they say, the figures count what the goals say, and a missing npm is
one line, not silence."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import cv2
import numpy as np
import pytest

from slimfuse.bench import face_measures as fm
from slimfuse.bench import real_photos as rp
from slimfuse.bench.face_judge import HOG_LONGEST, HOG_THRESHOLD, HOG_UPSAMPLE, FaceJudge
from slimfuse.bench.quality import Swapper
from slimfuse.cli.main import main
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.metrics import psnr
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.mesh_swap import MeshSwapper, MeshTuning
from slimfuse.processors.mesh_swap.eyes import EYE_CONTOURS, EyeLandmarker
from slimfuse.processors.mesh_swap.visibility import visible_mesh


@pytest.mark.slow
def test_the_judge_finds_each_face_of_a_group_photo_and_nothing_else(judge: FaceJudge,
                                                                    development_photos: dict[str, np.ndarray]) -> None:
    party = development_photos["sample1"]
    faces = judge.faces(party)
    assert len(faces) == 3 and all(150 < f.box[2] - f.box[0] < 260 for f in faces)
    # HOG alone, at the threshold that lets a downcast face in, also proposes a badge and a fold
    scale = HOG_LONGEST / max(party.shape[:2])
    small = cv2.resize(party, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    assert len(judge.hog.run(small, HOG_UPSAMPLE, HOG_THRESHOLD)[0]) > 3
    # the sofa photo: a profile, a face looking down with closed eyes, and a face with lowered lids
    sofa = judge.faces(development_photos["sample2"])
    assert len(sofa) == 3
    downcast = sofa[1]  # left to right: the middle one
    assert max(fm.eye_aspect_ratio(downcast.points, eye) for eye in (0, 1)) < fm.CLOSED_EYE


def test_the_judge_on_the_portraits(judge: FaceJudge, astronaut: np.ndarray, grace_hopper: np.ndarray) -> None:
    [a], [g] = judge.faces(astronaut), judge.faces(grace_hopper)
    assert 150 < a.box[0] < a.box[2] < 330 and 150 < g.box[0] < g.box[2] < 390
    da, dg = judge.descriptor(astronaut, a.box), judge.descriptor(grace_hopper, g.box)
    assert np.linalg.norm(da - judge.descriptor(astronaut, a.box)) < 1e-6 and np.linalg.norm(da - dg) > 0.6


@pytest.mark.parametrize(("portrait", "degrees"), [("astronaut", 40), ("grace_hopper", 40), ("grace_hopper", -40)])
def test_a_tilted_face_s_eyes_are_read_where_they_are(judge: FaceJudge, portrait: str, degrees: float,
                                                     request: pytest.FixtureRequest) -> None:
    import dlib  # the judge's own library (the bench extra)

    image = request.getfixturevalue(portrait)
    [upright] = judge.faces(image)
    h, w = image.shape[:2]
    turn = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
    tilted = cv2.warpAffine(image, turn, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    truth = (upright.points @ turn[:, :2].T + turn[:, 2])[36:48]
    [face] = judge.faces(tilted)
    eye_error = np.abs(face.points[36:48] - truth).max()
    # Read as it stands, the predictor puts the eyes 12-25 px (of a 190 px face) off theirs.
    unlevelled = judge.predictor(tilted, dlib.rectangle(*face.box))
    unlevelled_error = max(np.abs(np.array([unlevelled.part(i).x, unlevelled.part(i).y]) - truth[i - 36]).max()
                           for i in range(36, 48))
    assert unlevelled_error > 10 and eye_error < 4


def test_variants_flip_crop_shrink_and_compress(judge: FaceJudge, astronaut: np.ndarray) -> None:
    faces = judge.faces(astronaut)
    made = {t.variant: t.image for t in rp.variants("astronaut", astronaut, faces)}
    assert list(made) == ["original", "flipped", "cropped", "640 px", "JPEG 70"]
    assert np.array_equal(made["flipped"], astronaut[:, ::-1])
    x0, y0, x1, y1 = faces[0].box
    assert made["cropped"].shape[1] < astronaut.shape[1] or made["cropped"].shape[0] < astronaut.shape[0]
    assert made["cropped"].shape[0] >= y1 - y0 and made["cropped"].shape[1] >= x1 - x0
    assert made["640 px"].shape[1] == 640
    assert 30 < psnr(made["JPEG 70"], astronaut) < 60


def test_live_frame_puts_the_face_at_150_px_in_the_middle(judge: FaceJudge, astronaut: np.ndarray) -> None:
    [face] = judge.faces(astronaut)
    frame = rp.live_frame(astronaut, face)
    assert frame.shape == (480, 640, 3)
    [seen] = judge.faces(frame)
    assert 120 < seen.box[2] - seen.box[0] < 180
    assert abs((seen.box[0] + seen.box[2]) / 2 - 320) < 30 and abs((seen.box[1] + seen.box[3]) / 2 - 240) < 40


def _record(source: str = "astronaut", eyes: tuple[tuple[float, float], tuple[float, float]] = ((0.3, 0.3), (0.3, 0.3)),
            to_source: float = 0.45, to_own: float = 0.7, **changes: object) -> rp.FaceRecord:
    values: dict[str, object] = dict(
        photo="p", variant="original", source=source, box=(0, 0, 100, 100), face_px=100, yaw=0.0,
        eyes_target=eyes[0], eyes_output=eyes[1], mouth_target=0.02, mouth_output=0.02, to_source=to_source,
        to_own_face=to_own, forehead_change=0.0, new_dark_frames=0.0, new_light_lines=0.0, cheek_change=(1.0, 1.0), far_cheek=0,
        far_cheek_detail=1.0, edge_ratio=1.0, edge_outline=1.0, edge_ring=1.0)
    values.update(changes)
    return rp.FaceRecord(**values)  # type: ignore[arg-type]


def test_a_face_carries_the_source_only_when_nearer_it_than_its_own() -> None:
    assert _record(to_source=0.55, to_own=0.7).carries_source
    assert not _record(to_source=0.55, to_own=0.5).carries_source  # nearer its own face
    assert not _record(to_source=0.62, to_own=0.9).carries_source  # not the same person as the source


def test_figures_count_what_the_goals_say() -> None:
    good = [_record(source, yaw=yaw) for source in rp.SOURCES for yaw in (0.0, 35.0)]
    r = rp.figures(good, good)
    assert r.passed, r.markdown()
    assert not rp.figures(good[:1], good).passed  # no turned face: that goal is not met by measuring nothing
    opened = _record(eyes=((0.15, 0.3), (0.28, 0.3)))  # a closed eye opened, an open one kept
    r = rp.figures([opened, _record("grace_hopper")], good)
    assert r.get("expression", "closed target eyes opened (of 1)") == 1
    assert r.get("expression", "open target eyes closed (of 3)") == 0
    assert [f.ok for f in r.figures if f.name.startswith("closed target eyes")] == [False]
    fringe = [_record("astronaut", forehead_change=-12.0), _record("grace_hopper", new_dark_frames=0.04)]
    r = rp.figures(fringe, good)
    assert r.get("no source hair or glasses", "forehead within 5 grey levels, astronaut") == 0
    assert r.get("no source hair or glasses", "forehead within 5 grey levels, grace_hopper") == 1
    frames = "no source frames: grace_hopper's dark pixels at the eyes within 0.005 of astronaut's"
    assert r.get("no source hair or glasses", frames) == 0
    seam = [_record(source, edge_ratio=1.3, cheek_change=(7.0, 1.0)) for source in rp.SOURCES]
    r = rp.figures(seam, good)
    assert r.get("no paste edge", "paste-edge gradient within 1.1x of the target's") == 0
    assert r.get("turned faces", "both cheeks' a*, b* within 6 (|yaw| <= 60: 2)") == 0


def test_one_face_measured_after_a_real_swap(judge: FaceJudge, astronaut: np.ndarray, grace_hopper: np.ndarray) -> None:
    swap = Swapper()
    try:
        bench = rp.RealPhotoBench(judge, swap, {"astronaut": astronaut, "grace_hopper": grace_hopper})
        target = rp.Target("grace_hopper", "original", grace_hopper)
        [face] = judge.faces(grace_hopper)
        output = bench.swapped("astronaut", grace_hopper)
        record = bench.measure(target, "astronaut", output, face, judge.descriptor(grace_hopper, face.box))
        unswapped = bench.measure(target, "astronaut", grace_hopper, face, judge.descriptor(grace_hopper, face.box))
    finally:
        swap.close()
    assert record.carries_source and record.to_source < 0.5
    assert not unswapped.carries_source and unswapped.to_own_face < 1e-6
    assert unswapped.edge_ratio == unswapped.edge_outline == unswapped.edge_ring == 1.0
    assert unswapped.forehead_change == 0 and unswapped.cheek_change == (0.0, 0.0)
    assert min(record.eyes_output) > fm.CLOSED_EYE  # open eyes stay open


@pytest.mark.slow
def test_closed_eyes_under_make_up_stay_closed_under_the_astronauts_open_ones(
        judge: FaceJudge, development_photos: dict[str, np.ndarray], astronaut: np.ndarray) -> None:
    sofa = development_photos["sample2"]
    closed = max(judge.faces(sofa), key=lambda f: f.box[0])  # the right one: both lids down, lined and shaded
    swap = Swapper()
    try:
        bench = rp.RealPhotoBench(judge, swap, {"astronaut": astronaut})
        output = bench.swapped("astronaut", sofa)
        record = bench.measure(rp.Target("sample2", "original", sofa), "astronaut", output, closed,
                               judge.descriptor(sofa, closed.box, closed.points))
    finally:
        swap.close()
    assert max(record.eyes_target) < fm.CLOSED_EYE
    # The astronaut's eyes (about 0.3) used to come in wide open (0.32 and 0.27); the target's lid line stays.
    assert max(record.eyes_output) < fm.CLOSED_EYE
    assert record.carries_source


@pytest.mark.slow
def test_lids_lowered_over_eyes_looking_down_are_kept(development_photos: dict[str, np.ndarray],
                                                       astronaut: np.ndarray, pool: ModelPool, store: Store) -> None:
    """sample1's middle face looks down under lowered, made-up lids: the iris model reads them a little open
    (0.075-0.14, so the opening alone does not say shut), but puts the iris centre at or below the lower lid, where
    an open eye's sits between its lids. Its lids are kept; read by the opening alone, the astronaut's open eyes were
    squeezed between them, looking out."""
    party = development_photos["sample1"]
    analyser, eyes = FaceAnalyser(pool), EyeLandmarker(partial(pool.session, "iris_landmark"))
    left, downcast, right = sorted(analyser.faces(party), key=lambda face: float(face.landmarks[:, 0].min()))
    tuning = MeshTuning()
    lowered = eyes.lid_lines(party, downcast.landmarks)
    assert min(lowered.openings) > tuning.shut_eye_opening
    assert any(opening < tuning.lowered_eye_opening and depth >= tuning.lowered_iris_depth
               for opening, depth in zip(lowered.openings, lowered.iris_depths, strict=True))
    [portrait] = analyser.faces(astronaut)
    for image, face in ((party, left), (party, right), (astronaut, portrait)):
        assert max(eyes.lid_lines(image, face.landmarks).iris_depths) < 0.8  # open eyes, looking ahead

    topology = MeshTopology.from_json(store.path("face_mesh_topology").read_text(encoding="utf-8"))
    inside_eyes = np.zeros(party.shape[:2], np.uint8)
    for ring in EYE_CONTOURS.values():
        cv2.fillPoly(inside_eyes, [np.round(lowered.landmarks[list(ring), :2]).astype(np.int32)], 1)

    def eye_change(tuning: MeshTuning) -> float:
        swapper = MeshSwapper(topology, tuning=tuning, eyes=eyes)
        output, _ = swapper.swap_crop(party, downcast.landmarks, swapper.prepare_source(astronaut, portrait.landmarks))
        return float(np.abs(output.astype(np.int16) - party)[inside_eyes > 0].mean())

    # (levels, mean over her eyes: about 8 kept, moved a little with the face's shape; about 65 with the astronaut's
    # eyes squeezed in)
    kept, squeezed = eye_change(tuning), eye_change(MeshTuning(lowered_iris_depth=float("inf")))
    assert kept < 15.0 < 40.0 < squeezed
    # Half way through the fade before the threshold, half of her lids: no pop in a video as her eyes sink.
    half_way = MeshTuning(lowered_iris_depth=max(lowered.iris_depths) + 0.5 * tuning.lowered_fade)
    assert kept + 0.3 * (squeezed - kept) < eye_change(half_way) < kept + 0.7 * (squeezed - kept)


@pytest.mark.slow
def test_shut_eyes_kept_in_a_face_meet_its_light(development_photos: dict[str, np.ndarray], astronaut: np.ndarray,
                                                 pool: ModelPool, store: Store) -> None:
    """sample2's middle face looks down with shut eyes, a lamp on one cheek and hair across the other eye: its lids
    are kept with the skin where the astronaut's open eyes would land, lit and shaded as the photo is. Just outside
    them her skin takes that light (the seam's rule), where before it kept the colour step's wide light and the
    kept lids stood out as a pale crescent and a dark oval."""
    photo = development_photos["sample2"]
    analyser, eyes = FaceAnalyser(pool), EyeLandmarker(partial(pool.session, "iris_landmark"))
    downcast = sorted(analyser.faces(photo), key=lambda face: float(face.landmarks[:, 0].min()))[1]
    topology = MeshTopology.from_json(store.path("face_mesh_topology").read_text(encoding="utf-8"))

    def light_step(tuning: MeshTuning) -> float:
        """The mean luma difference of the output's light (blur 2 px) from the photo's just outside the kept lids."""
        swapper = MeshSwapper(topology, tuning=tuning, eyes=eyes)
        source = swapper.prepare_source(astronaut, analyser.faces(astronaut)[0].landmarks)
        layers = swapper.layers(photo, downcast.landmarks, source)
        assert layers is not None
        box = np.s_[layers.box[1]:layers.box[3], layers.box[0]:layers.box[2]]
        output, _ = swapper.swap_crop(photo, downcast.landmarks, source)
        # The kept lids: the regions left to the photo that hold the eyes (not what lies beyond the face's edge).
        _, labels = cv2.connectedComponents((layers.alpha < 0.5).astype(np.uint8))
        lids = np.zeros(labels.shape, np.uint8)
        for ring in EYE_CONTOURS.values():
            x, y = np.round(downcast.landmarks[list(ring), :2].mean(axis=0) - layers.box[:2]).astype(int)
            assert labels[y, x] > 0
            lids |= (labels == labels[y, x]).astype(np.uint8)
        outside = cv2.distanceTransform(1 - lids, cv2.DIST_L2, 5)
        beside = (outside > 0) & (outside <= 0.02 * max(lids.shape)) & (layers.alpha > 0.5)
        assert beside.sum() > 50
        light = [cv2.GaussianBlur(fm.gray(image[box]).astype(np.float32), (0, 0), 2.0) for image in (output, photo)]
        return float(np.abs(light[0] - light[1])[beside].mean())

    step, step_before = light_step(MeshTuning()), light_step(MeshTuning(shut_eye_seam=0.0))
    print(f"light step beside the kept lids: {step:.1f} levels, {step_before:.1f} without the step")
    assert step < 0.7 * step_before


def _swapped_by_tuning(pool: ModelPool, store: Store, source: np.ndarray, photo: np.ndarray,
                       landmarks: np.ndarray) -> Callable[[MeshTuning], np.ndarray]:
    """tuning -> `photo` with its face at FaceMesh `landmarks` swapped with `source`'s by a mesh swapper of that
    tuning (with the iris model, as the bench runs it)."""
    analyser = FaceAnalyser(pool)
    topology = MeshTopology.from_json(store.path("face_mesh_topology").read_text(encoding="utf-8"))
    eyes = EyeLandmarker(partial(pool.session, "iris_landmark"))
    source_landmarks = analyser.faces(source)[0].landmarks

    def swapped(tuning: MeshTuning) -> np.ndarray:
        swapper = MeshSwapper(topology, tuning=tuning, eyes=eyes)
        return swapper.swap_crop(photo, landmarks, swapper.prepare_source(source, source_landmarks))[0]

    return swapped


@pytest.mark.slow
def test_the_skin_below_the_source_s_fringe_takes_the_target_s_light(
        judge: FaceJudge, development_photos: dict[str, np.ndarray], astronaut: np.ndarray, pool: ModelPool,
        store: Store) -> None:
    """The astronaut's fringe is not used, and the target's forehead shows through it; her skin just below it lies
    in its shadow. On sample2's right face that shadow drew a dark band across the forehead above the brows (the
    bench's forehead band 4.2 levels darker than the photo's); the seam's rule around the fringe leaves the target's
    light there."""
    photo = development_photos["sample2"]
    face = max(FaceAnalyser(pool).faces(photo), key=lambda f: float(f.landmarks[:, 0].min()))
    judged = max(judge.faces(photo), key=lambda f: f.box[0])
    band = fm.forehead_band(photo.shape[:2], judged.points)
    swapped = _swapped_by_tuning(pool, store, astronaut, photo, face.landmarks)

    def forehead_change(tuning: MeshTuning) -> float:
        output = swapped(tuning)
        assert (output[band] != photo[band]).any(axis=-1).mean() > 0.3  # the swap reaches the band
        return fm.mean_gray(output, band) - fm.mean_gray(photo, band)

    change, change_before = forehead_change(MeshTuning()), forehead_change(MeshTuning(hair_seam=0.0))
    print(f"forehead change: {change:.1f} levels, {change_before:.1f} without the seam around the fringe")
    assert change_before < -3.0
    assert abs(change) < 0.6 * abs(change_before)


@pytest.mark.slow
def test_the_outline_of_the_source_s_lenses_does_not_show(
        judge: FaceJudge, development_photos: dict[str, np.ndarray], grace_hopper: np.ndarray, pool: ModelPool,
        store: Store) -> None:
    """Grace Hopper's lenses have light tan lower rims under their black top rims; they came through as a light
    outline of the lenses round the target's eyes. On sample3's middle face the bench's new light-line share at the
    eyes is now under 0.6 of what it is with the lenses not traced (`lens_rim` 0)."""
    photo = development_photos["sample3"]
    face = sorted(FaceAnalyser(pool).faces(photo), key=lambda f: float(f.landmarks[:, 0].mean()))[1]
    judged = sorted(judge.faces(photo), key=lambda f: f.box[0])[1]
    swapped = _swapped_by_tuning(pool, store, grace_hopper, photo, face.landmarks)

    def light_lines(tuning: MeshTuning) -> float:
        output = swapped(tuning)
        zone = fm.frame_zone(photo.shape[:2], judged.points, judge.points(output, judged.box, judged.tilt))
        assert (output[zone] != photo[zone]).any(axis=-1).mean() > 0.5  # the swap covers the zone
        return fm.new_light_lines(output, photo, zone)

    traced, untraced = light_lines(MeshTuning()), light_lines(MeshTuning(lens_rim=0.0))
    print(f"new light-line share at the eyes: {traced:.3f}, {untraced:.3f} with the lenses not traced")
    assert untraced > 0.05
    assert traced < 0.6 * untraced


@pytest.mark.slow
def test_a_face_in_profile_is_left_as_it_is(judge: FaceJudge, development_photos: dict[str, np.ndarray],
                                            grace_hopper: np.ndarray, pool: ModelPool, store: Store) -> None:
    """sample2's profile (its left face): FaceMesh folds the far half of its mesh onto the nose line (a fifth of the
    mesh faces away, against under 0.07 on the other faces), so the swap would paint an open eye over the closed
    one and teeth on the cheek. It stays as it was, and the other two faces are swapped; a face turning toward a
    profile fades out first."""
    sofa = development_photos["sample2"]
    topology = MeshTopology.from_json(store.path("face_mesh_topology").read_text(encoding="utf-8"))
    mesh = MeshSwapper(topology).mesh
    by_left_edge = sorted(FaceAnalyser(pool).faces(sofa), key=lambda face: float(face.landmarks[:, 0].min()))
    facing_away = [visible_mesh(mesh.triangles, mesh.with_hole_centres(face.landmarks), sofa.shape[:2]).facing_away
                   for face in by_left_edge]
    assert len(facing_away) == 3
    assert facing_away[0] > MeshTuning().max_facing_away > 0.1 > max(facing_away[1:])
    # Short of that, the face fades out: half way through the fade, the swap shows at half strength.
    source = FaceAnalyser(pool).faces(grace_hopper)[0].landmarks

    def strongest_alpha(tuning: MeshTuning) -> float:
        swapper = MeshSwapper(topology, tuning=tuning)
        layers = swapper.layers(sofa, by_left_edge[0].landmarks, swapper.prepare_source(grace_hopper, source))
        return 0.0 if layers is None else float(layers.alpha.max())

    full = strongest_alpha(MeshTuning(max_facing_away=1.0))
    assert strongest_alpha(MeshTuning()) == 0.0 and full > 0.9
    assert strongest_alpha(MeshTuning(max_facing_away=facing_away[0] + 0.02, profile_fade=0.04)) == \
        pytest.approx(0.5 * full, abs=0.02)
    swap = Swapper()
    try:
        output = rp.RealPhotoBench(judge, swap, {"grace_hopper": grace_hopper}).swapped("grace_hopper", sofa)
    finally:
        swap.close()
    profile, *others = sorted(judge.faces(sofa), key=lambda face: face.box[0])
    x0, y0, x1, y1 = profile.box
    assert np.array_equal(output[y0:y1, x0:x1], sofa[y0:y1, x0:x1])
    for face in others:
        x0, y0, x1, y1 = face.box
        assert np.abs(output[y0:y1, x0:x1].astype(np.int16) - sofa[y0:y1, x0:x1]).mean() > 5.0


def test_without_npm_the_section_says_why_it_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLIMFUSE_HOME", str(tmp_path / "home"))  # nothing cached
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm
    assert main(["bench", "quality", "--real-photos"]) == 1
    err = capsys.readouterr().err
    assert "real photos: skipped: npm is not installed" in err

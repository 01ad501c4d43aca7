"""The mesh swapper on real photos with real FaceMesh landmarks, judged with dlib's face descriptor."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

import cv2
import dlib
import numpy as np
import pytest

from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.mesh_topology import MeshTopology
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors import color as color_ops
from slimfuse.processors.blend import paste_back
from slimfuse.processors.masks import polygons_signed_distance
from slimfuse.processors.mesh_swap import MeshSwapOptions, MeshSwapper, SourceFace

# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="session")
def topology(store: Store) -> MeshTopology:
    return MeshTopology.from_json(store.path("face_mesh_topology").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def faces(pool: ModelPool, grace_hopper: np.ndarray, astronaut: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each photo with the project's own FaceMesh landmarks (detector, rotated crop, refinement)."""
    analyser = FaceAnalyser(pool)
    return {name: (image, analyser.faces(image)[0].landmarks) for name, image in
            (("grace_hopper", grace_hopper), ("astronaut", astronaut))}


@pytest.fixture(scope="session")
def descriptor(store: Store) -> Callable[[np.ndarray], np.ndarray]:
    """image -> dlib 128-d descriptor of its largest face, found independently with dlib's HOG detector."""
    sp = dlib.shape_predictor(str(store.path("dlib_shape_predictor_5")))
    rec = dlib.face_recognition_model_v1(str(store.path("dlib_face_recognition_resnet")))
    det = dlib.get_frontal_face_detector()

    def describe(img: np.ndarray) -> np.ndarray:
        img = np.ascontiguousarray(img)
        rects = det(img, 1)
        assert len(rects) >= 1, "dlib finds no face in the swapped image"
        r = max(rects, key=lambda r: r.area())
        return np.asarray(rec.compute_face_descriptor(img, sp(img, r)))

    return describe


def face_crop(image: np.ndarray, landmarks: np.ndarray, max_face: int = 512, factor: float = 2.0,
              angle_deg: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A square crop around the face (what the pipeline hands the swapper): (crop, landmarks in the crop,
    crop_from_frame 2x3)."""
    lo, hi = landmarks[:, :2].min(0), landmarks[:, :2].max(0)
    size = float((hi - lo).max())
    center = (lo + hi) / 2
    scale = min(1.0, max_face / size)
    side = int(round(size * factor * scale))
    m = cv2.getRotationMatrix2D((float(center[0]), float(center[1])), angle_deg, scale)
    m[:, 2] += side / 2 - center
    crop = cv2.warpAffine(image, m, (side, side), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    lm = landmarks.copy()
    lm[:, :2] = landmarks[:, :2] @ m[:, :2].T + m[:, 2]
    lm[:, 2] *= scale
    return crop, lm.astype(np.float32), m


def swap_photo(topology: MeshTopology, faces: dict, source: str, target: str,
               options: MeshSwapOptions = MeshSwapOptions()) -> tuple[np.ndarray, dict]:
    swapper = MeshSwapper(topology, options)
    src = swapper.prepare_source(*faces[source])
    frame, lm = faces[target]
    crop, crop_lm, m = face_crop(frame, lm)
    out, alpha = swapper.swap_crop(crop, crop_lm, src)
    return paste_back(frame, out, alpha, m), dict(crop=crop, landmarks=crop_lm, out=out, alpha=alpha, m=m,
                                                   swapper=swapper, source=src)


# ------------------------------------------------------------------------------------------------- tests

PAIRS = [("grace_hopper", "astronaut"), ("astronaut", "grace_hopper")]


@pytest.mark.parametrize("source,target", PAIRS)
def test_identity_moves_to_the_source(topology, faces, descriptor, source: str, target: str) -> None:
    swapped, _ = swap_photo(topology, faces, source, target)
    d_src = descriptor(faces[source][0])
    d_tgt = descriptor(faces[target][0])
    d_out = descriptor(swapped)
    to_source = float(np.linalg.norm(d_out - d_src))
    to_target = float(np.linalg.norm(d_out - d_tgt))
    print(f"{source} -> {target}: to source {to_source:.3f}, to target {to_target:.3f}, "
          f"originals {np.linalg.norm(d_src - d_tgt):.3f}")
    assert to_source < 0.6
    assert to_source < to_target


@pytest.mark.parametrize("source,target", PAIRS)
def test_identity_regression_guard(topology, faces, descriptor, source: str, target: str) -> None:
    """Measured about 0.37-0.38 both ways; a crude 68-point prototype reached only 0.51-0.58."""
    swapped, _ = swap_photo(topology, faces, source, target)
    assert float(np.linalg.norm(descriptor(swapped) - descriptor(faces[source][0]))) < 0.5


@pytest.mark.parametrize("blend", ["feather", "poisson"])
def test_alpha_zero_far_outside_and_untouched_there(topology, faces, blend: Literal["feather", "poisson"]) -> None:
    for source, target in PAIRS:
        _, r = swap_photo(topology, faces, source, target, MeshSwapOptions(blend=blend))
        crop, out, alpha = r["crop"], r["out"], r["alpha"]
        assert out.shape == crop.shape and out.dtype == np.uint8
        assert alpha.shape == crop.shape[:2] and alpha.dtype == np.float32
        assert alpha.min() >= 0.0 and alpha.max() <= 1.0
        zero = alpha == 0
        assert np.array_equal(out[zero], crop[zero])
        # alpha is 0 everywhere outside the face oval, and 1 in the middle of the face
        lm = r["landmarks"]
        oval = lm[list(topology.face_oval), :2]
        sd = polygons_signed_distance(alpha.shape, [oval], 0)
        assert sd is not None
        signed, (x0, y0) = sd
        inside_oval = np.zeros(alpha.shape, dtype=bool)
        inside_oval[y0:y0 + signed.shape[0], x0:x0 + signed.shape[1]] = signed >= 0
        assert not alpha[~inside_oval].any()
        nose = np.rint(lm[1, :2]).astype(int)
        assert alpha[nose[1], nose[0]] > 0.99
        assert (alpha > 0).mean() < 0.5 and (out != crop).any()


def test_paste_back_leaves_pixels_outside_alpha_identical(topology, faces) -> None:
    frame, lm = faces["grace_hopper"]
    swapper = MeshSwapper(topology)
    src = swapper.prepare_source(*faces["astronaut"])
    crop, crop_lm, m = face_crop(frame, lm, max_face=300, angle_deg=12.0)  # scaled and rotated crop
    out, alpha = swapper.swap_crop(crop, crop_lm, src)
    pasted = paste_back(frame, out, alpha, m)
    assert pasted is not frame and pasted.shape == frame.shape and pasted.dtype == np.uint8
    # Frame pixels whose crop position lies more than 2 crop pixels from any alpha > 0 must be untouched.
    reach = cv2.dilate((alpha > 0).astype(np.uint8), np.ones((5, 5), np.uint8))
    h, w = frame.shape[:2]
    xs, ys = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    cx = np.rint(m[0, 0] * xs + m[0, 1] * ys + m[0, 2]).astype(int)
    cy = np.rint(m[1, 0] * xs + m[1, 1] * ys + m[1, 2]).astype(int)
    inside = (cx >= 0) & (cx < alpha.shape[1]) & (cy >= 0) & (cy < alpha.shape[0])
    near = np.zeros((h, w), dtype=bool)
    near[inside] = reach[cy[inside], cx[inside]] > 0
    assert np.array_equal(pasted[~near], frame[~near])
    assert (pasted[near] != frame[near]).any()
    # Where the crop's alpha is 1, the frame takes the crop's pixel (up to resampling).
    full = np.zeros((h, w), dtype=bool)
    full[inside] = alpha[cy[inside], cx[inside]] == 1.0
    back = cv2.warpAffine(out, m, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    assert np.abs(pasted[full].astype(int) - back[full].astype(int)).mean() < 1.0


def test_paste_back_on_a_large_frame_is_local_and_exact() -> None:
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (2160, 3840, 3), dtype=np.uint8)
    crop = rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)
    alpha = np.zeros((256, 256), np.float32)
    cv2.circle(alpha, (128, 128), 80, 1.0, -1)
    alpha = cv2.GaussianBlur(alpha, (0, 0), 10).astype(np.float32)
    alpha[alpha < 1e-3] = 0
    m = cv2.getRotationMatrix2D((2000.0, 1000.0), 20, 0.5)  # frame -> crop: the face is 512 px in the frame
    m[:, 2] += np.array([128.0, 128.0]) - np.array([2000.0, 1000.0])
    paste_back(frame, crop, alpha, m)  # warm up
    t = time.perf_counter()
    out = paste_back(frame, crop, alpha, m)
    elapsed = time.perf_counter() - t
    changed = (out != frame).any(axis=2)
    ys, xs = np.nonzero(changed)
    assert changed.any()
    assert 1500 < xs.min() and xs.max() < 2500 and 500 < ys.min() and ys.max() < 1500
    assert elapsed < 0.5  # dominated by copying the frame, not by its size times the blend
    assert np.array_equal(paste_back(frame, crop, np.zeros_like(alpha), m), frame)


def test_color_step_moves_low_frequencies_toward_target(topology, faces) -> None:
    swapper = MeshSwapper(topology)
    for source, target in PAIRS:
        src = swapper.prepare_source(*faces[source])
        crop, lm, _ = face_crop(*faces[target])
        layers = swapper.layers(crop, lm, src)
        assert layers is not None
        w = layers.color_weight
        sel = w > 0.5
        base = layers.base.astype(np.float32)
        before = np.abs(layers.warped.astype(np.float32)[sel].mean(0) - base[sel].mean(0))
        after = np.abs(layers.corrected[sel].mean(0) - base[sel].mean(0))
        assert np.linalg.norm(after) < 0.25 * np.linalg.norm(before), (before, after)
        # locally too: the blurred images agree much better inside the face
        sigma = 0.25 * max(w.shape)
        tb = color_ops.normalized_blur(base, w, sigma)
        wb = color_ops.normalized_blur(layers.warped.astype(np.float32), w, sigma)
        cb = color_ops.normalized_blur(layers.corrected, w, sigma)
        err_before = np.abs(wb - tb)[sel].mean()
        err_after = np.abs(cb - tb)[sel].mean()
        assert err_after < 0.4 * err_before, (err_before, err_after)
        # ... while the detail (high frequencies) of the source stays
        hf_w = layers.warped.astype(np.float32) - cv2.GaussianBlur(layers.warped.astype(np.float32), (0, 0), 3)
        hf_c = layers.corrected - cv2.GaussianBlur(layers.corrected, (0, 0), 3)
        assert np.corrcoef(hf_w[sel].ravel(), hf_c[sel].ravel())[0, 1] > 0.9


def test_color_gain_is_damped_where_asked() -> None:
    rng = np.random.default_rng(1)
    target = np.full((64, 64, 3), 200, np.float32)
    warped = np.clip(100 + rng.normal(0, 5, (64, 64, 3)), 0, 255).astype(np.float32)
    weight = np.ones((64, 64), np.float32)
    damping = np.zeros((64, 64), np.float32)
    damping[:, 32:] = 1.0
    gain = color_ops.low_frequency_gain(warped, target, weight, 8.0, 1.0, damping)
    assert np.allclose(gain[:, 32:], 1.0)
    assert np.all(gain[:, :16] > 1.7)


def test_keep_mouth_leaves_the_target_mouth_interior_untouched(topology, faces) -> None:
    frame, lm = faces["astronaut"]  # smiling, teeth showing
    crop, crop_lm, _ = face_crop(frame, lm)
    opts = MeshSwapOptions()
    swapper = MeshSwapper(topology, opts)
    src = swapper.prepare_source(*faces["grace_hopper"])
    out, alpha = swapper.swap_crop(crop, crop_lm, src)
    span = crop_lm[:, :2].max(0) - crop_lm[:, :2].min(0)
    size = float(span.max())
    inner = crop_lm[list(topology.lips_inner), :2]
    sd = polygons_signed_distance(alpha.shape, [inner], 0)
    assert sd is not None
    signed, (x0, y0) = sd
    # the kept region's soft edge reaches at most 0.75 * hole_feather * face size into the mouth
    deep = np.zeros(alpha.shape, dtype=bool)
    deep[y0:y0 + signed.shape[0], x0:x0 + signed.shape[1]] = signed > 0.75 * opts.hole_feather * size * 1.3 + 1
    assert deep.sum() > 30  # the mouth is open
    assert np.array_equal(out[deep], crop[deep])
    assert not alpha[deep].any()
    # without keep_mouth the source's mouth is rendered there
    out2, alpha2 = MeshSwapper(topology, MeshSwapOptions(keep_mouth=False)).swap_crop(crop, crop_lm, src)
    assert alpha2[deep].mean() > 0.5 and (out2[deep] != crop[deep]).any()


def test_keep_eyes_leaves_the_target_eyes_untouched(topology, faces) -> None:
    frame, lm = faces["grace_hopper"]
    crop, crop_lm, _ = face_crop(frame, lm)
    opts = MeshSwapOptions(keep_eyes=True)
    swapper = MeshSwapper(topology, opts)
    out, alpha = swapper.swap_crop(crop, crop_lm, swapper.prepare_source(*faces["astronaut"]))
    size = float((crop_lm[:, :2].max(0) - crop_lm[:, :2].min(0)).max())
    for ring in (topology.left_eye, topology.right_eye):
        sd = polygons_signed_distance(alpha.shape, [crop_lm[list(ring), :2]], 0)
        assert sd is not None
        signed, (x0, y0) = sd
        deep = np.zeros(alpha.shape, dtype=bool)
        deep[y0:y0 + signed.shape[0], x0:x0 + signed.shape[1]] = signed > 0.75 * opts.hole_feather * size * 1.3 + 1
        assert deep.sum() > 20
        assert np.array_equal(out[deep], crop[deep])


def test_deterministic_and_source_reusable(topology, faces) -> None:
    swapper = MeshSwapper(topology)
    src = swapper.prepare_source(*faces["grace_hopper"])
    crop, lm, _ = face_crop(*faces["astronaut"])
    a = swapper.swap_crop(crop, lm, src)
    for _ in range(8):  # bit for bit, every time (OpenCV's precise distance transform, for one, is not)
        b = swapper.swap_crop(crop, lm, src)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    with pytest.raises(ValueError):
        src.image[0, 0, 0] = 1  # the prepared source is frozen


def test_prepare_source_limits_size_and_builds_pyramid(topology, faces) -> None:
    img, lm = faces["grace_hopper"]
    big = cv2.resize(img, None, fx=4, fy=4, interpolation=cv2.INTER_CUBIC)
    big_lm = lm * 4
    big_lm[:, :2] += 1.5  # pixel-centre convention of a 4x resize
    swapper = MeshSwapper(topology, MeshSwapOptions(max_source_face=400))
    src = swapper.prepare_source(big, big_lm)
    assert isinstance(src, SourceFace)
    assert src.face_size <= 401
    assert src.image.shape[0] < big.shape[0] // 2
    assert len(src.levels) >= 3 and src.levels[1].shape[0] == (src.levels[0].shape[0] + 1) // 2
    # a large source into a small target face uses a coarser level and still works
    crop, clm, _ = face_crop(*faces["astronaut"])
    layers = swapper.layers(crop, clm, src)
    assert layers is not None and layers.level >= 1


def test_no_face_in_crop_returns_input(topology, faces) -> None:
    swapper = MeshSwapper(topology)
    src = swapper.prepare_source(*faces["grace_hopper"])
    crop, lm, _ = face_crop(*faces["astronaut"])
    far = lm.copy()
    far[:, 0] += 10 * crop.shape[1]
    out, alpha = swapper.swap_crop(crop, far, src)
    assert np.array_equal(out, crop) and not alpha.any()


def test_options_are_validated() -> None:
    with pytest.raises(ValueError):
        MeshSwapOptions(blend="laplacian")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        MeshSwapOptions(color_strength=1.5)
    with pytest.raises(ValueError):
        MeshSwapOptions(mask_feather=0)
    with pytest.raises(ValueError):
        MeshSwapOptions(shape_transfer=-0.1)

"""The seam step on real photo pixels: the target's light over the seam map and its grain over the grain zone, the
face untouched off them, and nothing of the pixels the face does not show bleeding in."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors import color as color_ops
from slimfuse.processors.mesh_swap import MeshTuning
from slimfuse.processors.mesh_swap.seam import seam_matched

SIZE = 200.0  # the face size the tuning's fractions are of
TUNING = MeshTuning()


def _halves(astronaut: np.ndarray, grace_hopper: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The astronaut's face, soft-focused, as the target; grace_hopper's (wrinkled, 30 levels brighter) as the
    rendered face; the seam 1 on the left half, falling to 0 over the next tenth."""
    target = cv2.GaussianBlur(np.ascontiguousarray(astronaut[40:240, 125:325]), (0, 0), 1.5)
    face = np.clip(grace_hopper[180:380, 160:360].astype(np.float32) + 30.0, 0.0, 255.0)
    columns = np.arange(200, dtype=np.float32)
    seam = np.broadcast_to(np.clip((120.0 - columns) / 20.0, 0.0, 1.0), (200, 200)).astype(np.float32)
    return target, face, np.ascontiguousarray(seam)


def _fine_energy(luma: np.ndarray, where: tuple[slice, slice]) -> float:
    band = luma - cv2.GaussianBlur(luma, (0, 0), 1.0)
    return float(np.square(band)[where].mean())


def test_the_seam_takes_the_target_s_light_and_holds_the_grain(astronaut: np.ndarray,
                                                                grace_hopper: np.ndarray) -> None:
    target, face, seam = _halves(astronaut, grace_hopper)
    shown = np.ones(seam.shape, bool)
    result = seam_matched(face.copy(), target, seam, seam, shown, SIZE, TUNING)
    sigma = 2.0 * TUNING.seam_light * SIZE  # past the source's own features at the seam's light scale
    light = cv2.GaussianBlur(color_ops.luma(result), (0, 0), sigma)
    target_luma = color_ops.luma(target.astype(np.float32))
    target_light = cv2.GaussianBlur(target_luma, (0, 0), sigma)
    face_light = cv2.GaussianBlur(color_ops.luma(face), (0, 0), sigma)
    inner = np.s_[30:170, 10:70]  # where the seam is 1, away from the image's border and the seam's edge
    assert np.abs(face_light - target_light)[inner].mean() > 25.0  # the faces' light really differs
    assert np.abs(light - target_light)[inner].mean() < 8.0

    face_energy, target_energy = _fine_energy(color_ops.luma(face), inner), _fine_energy(target_luma, inner)
    assert face_energy > 10.0 * target_energy  # her wrinkles and rims on a soft-focused face
    # Held to the target's local energy: near it, not ten times over (her rims' edges stand out of any local mean).
    assert _fine_energy(color_ops.luma(result), inner) < min(3.0 * target_energy, 0.2 * face_energy)
    # Off the seam, the face is its own.
    np.testing.assert_allclose(result[:, 121:], face[:, 121:], atol=1e-3)


def test_pixels_the_face_does_not_show_do_not_bleed_into_the_seam(astronaut: np.ndarray,
                                                                   grace_hopper: np.ndarray) -> None:
    """What lies under a block the face does not show (left to the target: unpainted, or the source's hair) changes
    nothing of the face around it: black or white there, the result is the same; counted, the black would leave a
    halo beside it."""
    target, face, seam = _halves(astronaut, grace_hopper)
    shown = np.ones(seam.shape, bool)
    shown[80:120, :40] = False
    black, white = face.copy(), face.copy()
    black[~shown], white[~shown] = 0.0, 255.0
    with_black = seam_matched(black, target, seam, seam, shown, SIZE, TUNING)
    with_white = seam_matched(white, target, seam, seam, shown, SIZE, TUNING)
    np.testing.assert_allclose(with_black[shown], with_white[shown], atol=1e-2)
    beside = np.zeros(seam.shape, bool)
    beside[65:135, :60] = True
    beside &= shown
    counted = seam_matched(black.copy(), target, seam, seam, np.ones(seam.shape, bool), SIZE, TUNING)
    assert np.abs(color_ops.luma(counted) - color_ops.luma(with_black))[beside].mean() > 10.0


def test_no_seam_changes_nothing(astronaut: np.ndarray, grace_hopper: np.ndarray) -> None:
    target, face, _ = _halves(astronaut, grace_hopper)
    nowhere = np.zeros(face.shape[:2], np.float32)
    result = seam_matched(face.copy(), target, nowhere, nowhere, np.ones(face.shape[:2], bool), SIZE, TUNING)
    np.testing.assert_array_equal(result, face)


def test_the_grain_is_held_further_in_than_the_light(astronaut: np.ndarray, grace_hopper: np.ndarray) -> None:
    """Past the light's seam the face keeps its own light, but its grain is still held where the grain zone reaches:
    a wrinkled source's texture fades in, not starting at once where the light does (the edge of a mask)."""
    target, face, seam = _halves(astronaut, grace_hopper)
    columns = np.arange(200, dtype=np.float32)
    grain_zone = np.ascontiguousarray(np.broadcast_to(np.clip((180.0 - columns) / 20.0, 0.0, 1.0), (200, 200)),
                                      dtype=np.float32)
    shown = np.ones(seam.shape, bool)
    result = seam_matched(face.copy(), target, seam, grain_zone, shown, SIZE, TUNING)
    light_only = seam_matched(face.copy(), target, seam, seam, shown, SIZE, TUNING)
    between = np.s_[30:170, 135:155]  # past the light's seam, where the grain zone is still 1
    sigma = 2.0 * TUNING.seam_light * SIZE
    light, own_light = (cv2.GaussianBlur(color_ops.luma(image), (0, 0), sigma) for image in (result, face))
    assert np.abs(light - own_light)[between].mean() < 3.0  # the face's own light
    face_energy = _fine_energy(color_ops.luma(face), between)
    assert _fine_energy(color_ops.luma(light_only), between) > 0.9 * face_energy  # without the zone: all of it
    assert _fine_energy(color_ops.luma(result), between) < 0.3 * face_energy
    np.testing.assert_allclose(result[:, 181:], face[:, 181:], atol=1e-3)


def test_around_a_region_falls_smoothly_from_its_edge_to_the_reach() -> None:
    """`around` (the light's zone around kept shut eyes): 1 on the region, falling without steps to 0 at the reach
    outside it, whatever the region's own soft edge."""
    from slimfuse.processors.mesh_swap.seam import around

    region = np.zeros((80, 80), np.float32)
    cv2.circle(region, (40, 40), 15, 1.0, -1)
    region = cv2.GaussianBlur(region, (0, 0), 1.0)
    zone = around(region, 10.0)
    row = zone[40, 40:]  # from the middle outward: the edge at about 15 px
    assert np.all(zone[region > 0.5] == 1.0)
    assert row[16] > 0.85 and 0.3 < row[19] < 0.7 and np.all(row[26:] == 0.0)
    assert np.all(np.diff(row) <= 0) and float(np.abs(np.diff(row)).max()) < 0.3

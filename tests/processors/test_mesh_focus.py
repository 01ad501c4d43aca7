"""The focus step on real photo pixels: the blur it finds is the blur a target was given, it grows smoothly with
it, and a target as sharp as the source or sharper gets none."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors import color as color_ops
from slimfuse.processors.mesh_swap.focus import focus_blur, shown_blur


def _face_luma(grace_hopper: np.ndarray) -> np.ndarray:
    """grace_hopper's face (eyes, glasses, mouth), in luma."""
    return color_ops.luma(np.ascontiguousarray(grace_hopper[180:380, 160:360]).astype(np.float32))


def test_the_blur_found_is_the_blur_the_target_was_given(grace_hopper: np.ndarray) -> None:
    luma = _face_luma(grace_hopper)
    zone = np.zeros(luma.shape, bool)
    zone[30:170, 30:170] = True  # off the crop's border, which the blurs reflect
    for given in (0.8, 1.5, 2.5, 3.5):
        found = focus_blur(luma, cv2.GaussianBlur(luma, (0, 0), given), zone, 10.0)
        assert abs(found - given) < 0.2 * given, (given, found)
    assert focus_blur(luma, luma, zone, 10.0) == 0.0  # as sharp: left as it is
    # A sharper target (the source is the blurred one) gets no blur either; the cap holds.
    assert focus_blur(cv2.GaussianBlur(luma, (0, 0), 1.5), luma, zone, 10.0) == 0.0
    assert focus_blur(luma, cv2.GaussianBlur(luma, (0, 0), 3.5), zone, 2.0) == 2.0


def test_the_blur_grows_smoothly_with_the_target_s(grace_hopper: np.ndarray) -> None:
    """A face going out of focus over a video's frames gets a little more blur each frame, without steps."""
    luma = _face_luma(grace_hopper)
    zone = np.zeros(luma.shape, bool)
    zone[30:170, 30:170] = True
    given = np.arange(0.6, 2.41, 0.1)
    found = [focus_blur(luma, cv2.GaussianBlur(luma, (0, 0), float(sigma)), zone, 10.0) for sigma in given]
    steps = np.diff(found)
    assert (steps > 0).all() and steps.max() < 0.25, found


def test_what_the_face_does_not_show_does_not_bleed_into_the_blur(grace_hopper: np.ndarray) -> None:
    face = np.ascontiguousarray(grace_hopper[180:380, 160:360]).astype(np.float32)
    shown = np.ones(face.shape[:2], bool)
    shown[:, :60] = False
    black, white = face.copy(), face.copy()
    black[:, :60], white[:, :60] = 0.0, 255.0
    blurred_black, blurred_white = shown_blur(black, shown, 3.0), shown_blur(white, shown, 3.0)
    np.testing.assert_allclose(blurred_black[:, 60:], blurred_white[:, 60:], atol=1e-3)
    np.testing.assert_array_equal(blurred_black[:, :30], black[:, :30])  # nothing shown within reach: as it was
    assert np.abs(blurred_black[:, 60:] - face[:, 60:]).mean() > 1.0  # and the face really was blurred

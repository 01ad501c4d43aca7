"""The One-Euro landmark filter: a still face gives exactly still points; a moving one is followed."""
from __future__ import annotations

import numpy as np

from slimfuse.faces.smooth import OneEuroFilter, OneEuroSettings


def test_a_still_noisy_face_gives_the_same_points_every_frame() -> None:
    rng = np.random.default_rng(0)
    still = rng.uniform(0, 200, (468, 3)).astype(np.float32)
    smoother = OneEuroFilter()
    outputs = [smoother(still + rng.normal(0, 0.1, still.shape).astype(np.float32), index / 25, scale=200.0)
               for index in range(40)]
    assert all(np.array_equal(out, outputs[0]) for out in outputs[1:])


def test_a_moving_face_is_followed_with_little_lag() -> None:
    start = np.random.default_rng(1).uniform(0, 200, (468, 3)).astype(np.float32)
    for settings in (OneEuroSettings(), OneEuroSettings(hold=0.0)):
        smoother = OneEuroFilter(settings)
        for index in range(25):
            out = smoother(start + np.float32(2.0 * index), index / 25, scale=200.0)  # 2 px a frame, 50 px/s
        assert float(np.abs(out - (start + 48.0)).max()) < 3.0


def test_a_mouth_opening_on_a_still_head_is_followed() -> None:
    rng = np.random.default_rng(2)
    still = rng.uniform(0, 200, (468, 3)).astype(np.float32)
    smoother = OneEuroFilter()
    for index in range(10):
        smoother(still + rng.normal(0, 0.1, still.shape).astype(np.float32), index / 25, scale=200.0)
    opened = still.copy()
    opened[:40, 1] += 4.0  # the lips, 2 % of the face
    for index in range(10, 20):
        out = smoother(opened, index / 25, scale=200.0)
    assert float(np.abs(out[:40, 1] - opened[:40, 1]).max()) < 1.0

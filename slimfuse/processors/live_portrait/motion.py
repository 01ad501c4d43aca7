"""LivePortrait's motion: what the motion extractor reads off a face, and the arithmetic both processors share
(the keypoints posed by a rotation and an expression, the rotation from Euler angles, the limits FaceFusion 3.8.1
keeps expressions and head angles within)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The per-keypoint range of each expression value (x, y, z of the 21 keypoints), FaceFusion 3.8.1's
# facefusion/processors/live_portrait.py; an expression is clipped into it before the generator sees it.
EXPRESSION_LOW = np.array([
    (-2.88067125e-02, -8.12731311e-02, -1.70541159e-03), (-4.88598682e-02, -3.32196616e-02, -1.67431499e-04),
    (-6.75425082e-02, -4.28681746e-02, -1.98950816e-04), (-7.23103955e-02, -3.28503326e-02, -7.31324719e-04),
    (-3.87073644e-02, -6.01546466e-02, -5.50269964e-04), (-6.38048723e-02, -2.23840728e-01, -7.13261834e-04),
    (-3.02710701e-02, -3.93195450e-02, -8.24086510e-06), (-2.95799859e-02, -5.39318882e-02, -1.74219604e-04),
    (-2.92359516e-02, -1.53050944e-02, -6.30460854e-05), (-5.56493877e-03, -2.34344602e-02, -1.26858242e-04),
    (-4.37593013e-02, -2.77768299e-02, -2.70503685e-02), (-1.76926646e-02, -1.91676542e-02, -1.15090821e-04),
    (-8.34268332e-03, -3.99775570e-03, -3.27481248e-05), (-3.40162888e-02, -2.81868968e-02, -1.96679524e-04),
    (-2.91855410e-02, -3.97511162e-02, -2.81230678e-05), (-1.50395725e-02, -2.49494594e-02, -9.42573533e-05),
    (-1.67938769e-02, -2.00953931e-02, -4.00750607e-04), (-1.86435618e-02, -2.48535164e-02, -2.74416432e-02),
    (-4.61211195e-03, -1.21660791e-02, -2.93173041e-04), (-4.10017073e-02, -7.43824020e-02, -4.42762971e-02),
    (-1.90370996e-02, -3.74363363e-02, -1.34740388e-02),
], dtype=np.float32)[None]
EXPRESSION_HIGH = np.array([
    (4.46682945e-02, 7.08772913e-02, 4.08344204e-04), (2.14308221e-02, 6.15894832e-02, 4.85319615e-05),
    (3.02363783e-02, 4.45043296e-02, 1.28298725e-05), (3.05869691e-02, 3.79812494e-02, 6.57040102e-04),
    (4.45670523e-02, 3.97259220e-02, 7.10966764e-04), (9.43699256e-02, 9.85926315e-02, 2.02551950e-04),
    (1.61131397e-02, 2.92906128e-02, 3.44733417e-06), (5.23825921e-02, 1.07065082e-01, 6.61510974e-04),
    (2.85718683e-03, 8.32320191e-03, 2.39314613e-04), (2.57947259e-02, 1.60935968e-02, 2.41853559e-05),
    (4.90833223e-02, 3.43903080e-02, 3.22353356e-02), (1.44766076e-02, 3.39248963e-02, 1.42291479e-04),
    (8.75749043e-04, 6.82212645e-03, 2.76097053e-05), (1.86958015e-02, 3.84016186e-02, 7.33085908e-05),
    (2.01714113e-02, 4.90544215e-02, 2.34028921e-05), (2.46518422e-02, 3.29151377e-02, 3.48571630e-05),
    (2.22457591e-02, 1.21796541e-02, 1.56396593e-04), (1.72109623e-02, 3.01626958e-02, 1.36556877e-02),
    (1.83460284e-02, 1.61141958e-02, 2.87440169e-04), (3.57594155e-02, 1.80554688e-01, 2.75554154e-02),
    (2.17450950e-02, 8.66811201e-02, 3.34241726e-02),
], dtype=np.float32)[None]

ANGLE_LIMITS = {"pitch": 30.0, "yaw": 60.0, "roll": 20.0}
"""How far an edited head may turn, in degrees either way (further where the face itself already is)."""


@dataclass(frozen=True)
class Motion:
    """The motion extractor's reading of one face: head pose in degrees, scale [1, 1], translation [1, 3],
    expression and canonical keypoints [1, 21, 3] (float32, as the model gives them)."""

    pitch: float
    yaw: float
    roll: float
    scale: np.ndarray
    translation: np.ndarray
    expression: np.ndarray
    points: np.ndarray

    @classmethod
    def of(cls, outputs: list[np.ndarray]) -> Motion:
        """From the motion extractor's seven outputs, read by position."""
        pitch, yaw, roll, scale, translation, expression, points = outputs
        return cls(float(np.ravel(pitch)[0]), float(np.ravel(yaw)[0]), float(np.ravel(roll)[0]),
                   np.asarray(scale, np.float32), np.asarray(translation, np.float32),
                   np.asarray(expression, np.float32), np.asarray(points, np.float32))

    @property
    def rotation(self) -> np.ndarray:
        return rotation(self.pitch, self.yaw, self.roll)

    def posed(self, expression: np.ndarray | None = None, turned: np.ndarray | None = None) -> np.ndarray:
        """The keypoints [1, 21, 3] with `expression` (the face's own by default) under the rotation `turned` (the
        face's own by default), scaled and moved as the face is."""
        expression = self.expression if expression is None else expression
        turned = self.rotation if turned is None else turned
        return (self.scale * (self.points @ turned.T + expression) + self.translation).astype(np.float32)


def rotation(pitch: float, yaw: float, roll: float) -> np.ndarray:
    """The 3x3 float32 rotation of turning by `pitch` about x, then `yaw` about y, then `roll` about z (degrees,
    fixed axes)."""
    x, y, z = np.radians([pitch, yaw, roll])
    about_x = np.array([[1, 0, 0], [0, np.cos(x), -np.sin(x)], [0, np.sin(x), np.cos(x)]])
    about_y = np.array([[np.cos(y), 0, np.sin(y)], [0, 1, 0], [-np.sin(y), 0, np.cos(y)]])
    about_z = np.array([[np.cos(z), -np.sin(z), 0], [np.sin(z), np.cos(z), 0], [0, 0, 1]])
    return (about_z @ about_y @ about_x).astype(np.float32)


def limit_expression(expression: np.ndarray) -> np.ndarray:
    return np.clip(expression, EXPRESSION_LOW, EXPRESSION_HIGH)


def limit_angle(own: float, edited: float, limit: float) -> float:
    """`edited` kept within +-`limit` degrees, or as far as the face's `own` angle where that lies further out."""
    return float(np.clip(edited, min(own, -limit), max(own, limit)))

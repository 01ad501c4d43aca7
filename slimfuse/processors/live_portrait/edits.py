"""The face editor's edits as FaceFusion 3.8.1 makes them (facefusion/processors/modules/face_editor/core.py):
each expression edit moves a few keypoint coordinates by a fixed amount per unit of its value, with one set of moves
for values above 0 and another below; the head edits turn the head by up to a fixed angle; the eye and lip edits ask
the retargeters for the eyes or lips open (or closed) by the value's share."""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

Move = tuple[int, int, float]
"""(keypoint, axis 0/1/2 for x/y/z, change of that coordinate per unit of the value)."""

EXPRESSION_EDITS: Mapping[str, tuple[tuple[Move, ...], tuple[Move, ...]]] = MappingProxyType({
    # name: (moves for a value above 0, moves for one below 0)
    "eye_gaze_horizontal": (((11, 0, 0.015), (15, 0, 0.020)), ((11, 0, 0.020), (15, 0, 0.015))),
    "eye_gaze_vertical": ((((1, 1, 0.0025), (2, 1, -0.0025), (11, 1, -0.010), (13, 1, -0.005), (15, 1, -0.010),
                            (16, 1, -0.005)),) * 2),
    "mouth_grim": (((17, 2, -0.005), (19, 2, 0.01), (20, 1, -0.06), (20, 2, -0.03)),
                   ((19, 1, -0.05), (19, 2, -0.02), (20, 2, -0.03))),
    "mouth_position_horizontal": ((((19, 0, 0.05), (20, 0, 0.04)),) * 2),
    "mouth_position_vertical": (((19, 1, -0.04), (20, 1, -0.02)), ((19, 1, -0.05), (20, 1, -0.04))),
    "mouth_pout": (((19, 1, -0.022), (19, 2, 0.025), (20, 2, -0.002)),
                   ((19, 1, 0.022), (19, 2, 0.025), (20, 2, -0.002))),
    "mouth_purse": (((19, 1, -0.04), (19, 2, -0.02)),
                    ((14, 1, -0.02), (17, 2, 0.01), (19, 2, -0.015), (20, 2, -0.002))),
    "mouth_smile": (((20, 1, -0.015), (14, 1, -0.025), (17, 1, 0.01), (17, 2, 0.004), (3, 1, -0.0045),
                     (7, 1, -0.0045)),
                    ((14, 1, -0.02), (17, 1, 0.003), (19, 1, 0.02), (19, 2, -0.005), (20, 2, 0.01), (3, 1, 0.0045),
                     (7, 1, 0.0045))),
    "eyebrow_direction": (((1, 1, 0.015), (2, 1, -0.020)),
                          ((1, 0, -0.015), (2, 0, 0.020), (1, 1, 0.005), (2, 1, -0.005))),
})
"""The expression edits, in the order they are applied."""
HEAD_EDITS: Mapping[str, float] = MappingProxyType({"head_pitch": -20.0, "head_yaw": -60.0, "head_roll": 15.0})
"""Degrees each head angle changes by at value 1."""
EYE_OPEN, EYE_CLOSED = 0.6, 0.0
LIP_OPEN, LIP_CLOSED = 1.0, 0.0
"""The open ratios the retargeters are asked for at values above 0 and below."""
# iBUG-68 points: (top, bottom, one end, other end) of the opening whose ratio the retargeters take.
LEFT_EYE = (37, 40, 39, 36)
RIGHT_EYE = (43, 46, 45, 42)
LIPS = (62, 66, 54, 48)


def edited_expression(expression: np.ndarray, values: Mapping[str, float]) -> np.ndarray:
    """The expression [1, 21, 3] with every expression edit of `values` (name -> -1..1) made."""
    edited = np.array(expression, dtype=np.float32, copy=True)
    for name, (above, below) in EXPRESSION_EDITS.items():
        value = float(np.clip(values.get(name, 0.0), -1.0, 1.0))
        for point, axis, per_unit in above if value > 0 else below:
            edited[0, point, axis] += per_unit * value
    return edited


def edited_angles(values: Mapping[str, float]) -> tuple[float, float, float]:
    """The change of pitch, yaw and roll in degrees."""
    pitch, yaw, roll = (per_unit * float(np.clip(values.get(name, 0.0), -1.0, 1.0))
                        for name, per_unit in HEAD_EDITS.items())
    return pitch, yaw, roll


def open_ratio(points_68: np.ndarray, part: tuple[int, int, int, int]) -> float:
    """How open an eye or the lips are: the opening's height over its width."""
    top, bottom, end, other = (np.asarray(points_68[index], dtype=np.float64) for index in part)
    return float(np.linalg.norm(top - bottom) / (np.linalg.norm(end - other) + 1e-6))

"""The face debugger (`--processors ... face_debugger`): draws on the frame what the run found and did for each
face, so a user sees why a face was missed, cut badly or flickers.

For each processed face: its box, the detector's points, the mesh's five and 68 points, the outline of the mask
its result was pasted with (`--face-debugger-items`, FaceFusion's names and colours), and always a tag above the
box: a square (green: the result was generated this frame; orange: a result of an earlier frame was reused, as
FaceFusion marks faces it refilled from earlier frames), the track id and the detector's score.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from slimfuse.faces.align import five_points
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.faces.types import Face

Colour = tuple[int, int, int]
BOX: Colour = (255, 0, 0)
DETECTOR_POINTS: Colour = (255, 0, 0)
MESH_POINTS: Colour = (0, 255, 0)
MASK: Colour = (0, 255, 0)
GENERATED: Colour = (0, 255, 0)
REUSED: Colour = (255, 165, 0)
TEXT: Colour = (255, 255, 255)
FIELD: Colour = (0, 0, 0)
MASK_LEVEL = 100
"""The mask's outline is where it crosses this grey level of 255 (FaceFusion's threshold)."""


@dataclass(frozen=True)
class FaceMark:
    """What the debugger draws for one face of one frame, in the frame's pixels before any frame enhancer.

    mask: the alpha the face's result was pasted with (crop pixels) and the frame-to-crop affine; None when no face
    stage ran on it."""

    track_id: int
    face: Face
    reused: bool
    mask: tuple[np.ndarray, np.ndarray] | None = None


def line_scale(height: int) -> int:
    """Line width and point radius: 1 px per 270 rows of the frame, 1 to 10 (as FaceFusion's debugger)."""
    return max(1, min(10, round(height / 270)))


class FaceDebugger:
    """Draws FaceMarks onto frames; `items` are FaceFusion's --face-debugger-items."""

    def __init__(self, items: Sequence[str]) -> None:
        self.items = frozenset(items)

    def draw(self, frame: np.ndarray, marks: Sequence[FaceMark], scale: float = 1.0) -> np.ndarray:
        """`frame` (RGB, written in place) with every mark drawn; `scale`: the frame's size over the size the marks
        were taken at (a frame enhancer that keeps its scale)."""
        width = line_scale(frame.shape[0])
        for mark in marks:
            if "face-mask" in self.items and mark.mask is not None:
                self._outline(frame, *mark.mask, scale, width)
            box = np.rint(mark.face.box * scale).astype(np.int32)
            if "bounding-box" in self.items:
                cv2.rectangle(frame, (int(box[0]), int(box[1])), (int(box[2]), int(box[3])), BOX, width)
            for points, colour in self._points(mark.face):
                for x, y in np.rint(points * scale).astype(np.int32):
                    cv2.circle(frame, (int(x), int(y)), width, colour, -1)
            self._tag(frame, mark, box, width)
        return frame

    def _points(self, face: Face) -> list[tuple[np.ndarray, Colour]]:
        drawn: list[tuple[np.ndarray, Colour]] = []
        if "face-landmark-5" in self.items:
            drawn.append((np.asarray(face.keypoints, dtype=np.float64)[:, :2], DETECTOR_POINTS))
        if face.landmarks is None:
            return drawn
        if "face-landmark-5/68" in self.items:
            drawn.append((five_points(face.landmarks), MESH_POINTS))
        # slimfuse's 68 points always come from the mesh, so FaceFusion's 68/5 (68 points guessed from five) and 68
        # draw the same points
        if self.items & {"face-landmark-68", "face-landmark-68/5"}:
            drawn.append((landmarks_68(face.landmarks), MESH_POINTS))
        return drawn

    @staticmethod
    def _outline(frame: np.ndarray, alpha: np.ndarray, crop_from_frame: np.ndarray, scale: float, width: int) -> None:
        frame_from_crop = cv2.invertAffineTransform(np.asarray(crop_from_frame, dtype=np.float64)) * scale
        grey = np.clip(np.rint(np.asarray(alpha, dtype=np.float32) * 255), 0, 255).astype(np.uint8)
        placed = cv2.warpAffine(grey, frame_from_crop, (frame.shape[1], frame.shape[0]))
        inside = cv2.threshold(placed, MASK_LEVEL, 255, cv2.THRESH_BINARY)[1]
        contours, _ = cv2.findContours(inside, cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
        cv2.drawContours(frame, contours, -1, MASK, width)

    @staticmethod
    def _tag(frame: np.ndarray, mark: FaceMark, box: np.ndarray, width: int) -> None:
        """The reuse square, track id and score above the box (below it when the box touches the frame's top)."""
        side = 6 * width
        x = int(np.clip(box[0], 0, max(0, frame.shape[1] - side)))
        y = int(box[1]) - side - 2 * width
        if y < 0:
            y = min(int(box[3]) + 2 * width, frame.shape[0] - side)
        cv2.rectangle(frame, (x, y), (x + side - 1, y + side - 1), REUSED if mark.reused else GENERATED, -1)
        text = f"#{mark.track_id} {mark.face.score:.2f}"
        font, size, thickness = cv2.FONT_HERSHEY_SIMPLEX, 0.2 * width, max(1, width // 2)
        (text_width, _), _ = cv2.getTextSize(text, font, size, thickness)
        left = x + side + width
        # on a dark field, so the text reads on any face, hair or background
        cv2.rectangle(frame, (left, y), (left + text_width + 2 * width, y + side - 1), FIELD, -1)
        cv2.putText(frame, text, (left + width, y + side - 1 - width), font, size, TEXT, thickness, cv2.LINE_AA)

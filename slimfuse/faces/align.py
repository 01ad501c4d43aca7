"""Face alignment for the neural models: five points, the public templates, a similarity fit, warp and inverse.

The five points are, in template order: the eye on the image's left (the subject's right eye), the eye on the
image's right, the nose tip, the mouth corner on the image's left, the mouth corner on the image's right. They come
from the 468-point FaceMesh: eye centres as the mean of each eye's contour ring, nose tip 1, mouth corners 61
and 291. Templates are normalised to the crop (multiply by the crop size), as the public tools publish them.
The transform is a 4-DoF similarity (rotation, uniform scale, translation) fitted by least squares (Umeyama).
"""
from __future__ import annotations

import cv2
import numpy as np

TEMPLATES: dict[str, np.ndarray] = {
    name: np.array(points, dtype=np.float64)
    for name, points in {
        "arcface_112_v1": [(0.35473214, 0.45658929), (0.64526786, 0.45658929), (0.50000000, 0.61154464),
                           (0.37913393, 0.77687500), (0.62086607, 0.77687500)],
        "arcface_112_v2": [(0.34191607, 0.46157411), (0.65653393, 0.45983393), (0.50022500, 0.64050536),
                           (0.37097589, 0.82469196), (0.63151696, 0.82325089)],
        "arcface_128": [(0.36167656, 0.40387734), (0.63696719, 0.40235469), (0.50019687, 0.56044219),
                        (0.38710391, 0.72160547), (0.61507734, 0.72034453)],
        "dfl_whole_face": [(0.35342266, 0.39285716), (0.62797622, 0.39285716), (0.48660713, 0.54017860),
                           (0.38839287, 0.68750011), (0.59821427, 0.68750011)],
        "ffhq_512": [(0.37691676, 0.46864664), (0.62285697, 0.46912813), (0.50123859, 0.61331904),
                     (0.39308822, 0.72541100), (0.61150205, 0.72490465)],
        "mtcnn_512": [(0.36562865, 0.46733799), (0.63305391, 0.46585885), (0.50019127, 0.61942959),
                      (0.39032951, 0.77598822), (0.61178945, 0.77476328)],
        "styleganex_384": [(0.42353745, 0.52289879), (0.57725008, 0.52319972), (0.50123859, 0.61331904),
                           (0.43364461, 0.68337652), (0.57015325, 0.68306005)],
    }.items()
}
for _points in TEMPLATES.values():
    _points.setflags(write=False)

# FaceMesh eye contours (MediaPipe's FACEMESH_RIGHT_EYE / FACEMESH_LEFT_EYE vertex sets; subject's sides).
RIGHT_EYE_RING = (33, 7, 163, 144, 145, 153, 154, 155, 133, 173, 157, 158, 159, 160, 161, 246)
LEFT_EYE_RING = (263, 249, 390, 373, 374, 380, 381, 382, 362, 398, 384, 385, 386, 387, 388, 466)
NOSE_TIP = 1
RIGHT_MOUTH_CORNER, LEFT_MOUTH_CORNER = 61, 291


def template_points(template: str, size: int) -> np.ndarray:
    """The template's five points in pixels of a size x size crop."""
    return TEMPLATES[template] * float(size)


def five_points(landmarks: np.ndarray) -> np.ndarray:
    """(5, 2) float64 points in template order from (468, >=2) FaceMesh landmarks."""
    xy = np.asarray(landmarks, dtype=np.float64)[:, :2]
    return np.stack([
        xy[list(RIGHT_EYE_RING)].mean(0),  # image left
        xy[list(LEFT_EYE_RING)].mean(0),  # image right
        xy[NOSE_TIP],
        xy[RIGHT_MOUTH_CORNER],
        xy[LEFT_MOUTH_CORNER],
    ])


def similarity(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The 2x3 similarity (rotation, uniform scale, translation) that maps `source` points onto `target` points
    with the least squared error (Umeyama 1991); exact when they are related by a similarity."""
    src = np.asarray(source, dtype=np.float64)
    dst = np.asarray(target, dtype=np.float64)
    if src.shape != dst.shape or src.ndim != 2 or src.shape[1] != 2 or len(src) < 2:
        raise ValueError("similarity needs two matching (N, 2) point sets, N >= 2")
    src_mean, dst_mean = src.mean(0), dst.mean(0)
    src_c, dst_c = src - src_mean, dst - dst_mean
    covariance = dst_c.T @ src_c / len(src)
    u, singular, vt = np.linalg.svd(covariance)
    sign = np.ones(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[-1] = -1.0
    rotation = u @ np.diag(sign) @ vt
    variance = float((src_c ** 2).sum() / len(src))
    if variance <= 0:
        raise ValueError("similarity: the source points coincide")
    scale = float((singular * sign).sum() / variance)
    matrix = np.empty((2, 3))
    matrix[:, :2] = scale * rotation
    matrix[:, 2] = dst_mean - matrix[:, :2] @ src_mean
    return matrix


def align_matrix(points: np.ndarray, template: str, size: int) -> np.ndarray:
    """The 2x3 affine taking frame pixels to a size x size crop aligned to `template`."""
    return similarity(points, template_points(template, size))


def warp_to_crop(frame: np.ndarray, crop_from_frame: np.ndarray, size: int) -> np.ndarray:
    """The size x size crop that `crop_from_frame` cuts from `frame` (border replicated).

    Works on the crop's footprint in the frame only, and when the crop shrinks the face a lot the footprint is
    first reduced with area averaging, so large faces are not aliased and large frames cost no more."""
    m = np.asarray(crop_from_frame, dtype=np.float64).reshape(2, 3)
    frame_from_crop = cv2.invertAffineTransform(m)
    corners = np.array([[0, 0], [size, 0], [0, size], [size, size]], dtype=np.float64)
    footprint = corners @ frame_from_crop[:, :2].T + frame_from_crop[:, 2]
    height, width = frame.shape[:2]
    scale = float(np.sqrt(abs(np.linalg.det(m[:, :2]))))
    margin = 3 + int(np.ceil(2.0 / max(min(scale, 1.0), 1e-3)))  # the interpolation's reach, in frame pixels
    x0 = int(np.clip(np.floor(footprint[:, 0].min()) - margin, 0, width - 1))
    y0 = int(np.clip(np.floor(footprint[:, 1].min()) - margin, 0, height - 1))
    x1 = int(np.clip(np.ceil(footprint[:, 0].max()) + margin, x0 + 1, width))
    y1 = int(np.clip(np.ceil(footprint[:, 1].max()) + margin, y0 + 1, height))
    roi = frame[y0:y1, x0:x1]
    shift = np.array([[1.0, 0.0, x0], [0.0, 1.0, y0], [0.0, 0.0, 1.0]])
    local = np.vstack([m, [0.0, 0.0, 1.0]]) @ shift  # crop from ROI pixels
    factor = 1.0
    if scale < 0.5:  # shrink the ROI by area first, to about twice the crop's resolution
        factor = 2.0 * scale
        small = (max(1, int(round(roi.shape[1] * factor))), max(1, int(round(roi.shape[0] * factor))))
        fx, fy = small[0] / roi.shape[1], small[1] / roi.shape[0]
        roi = cv2.resize(roi, small, interpolation=cv2.INTER_AREA)
        # ROI pixel centres: (u + 0.5) / f - 0.5 in the full ROI.
        unscale = np.array([[1.0 / fx, 0.0, 0.5 / fx - 0.5], [0.0, 1.0 / fy, 0.5 / fy - 0.5], [0.0, 0.0, 1.0]])
        local = local @ unscale
    return cv2.warpAffine(roi, local[:2], (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def warp_face(frame: np.ndarray, points: np.ndarray, template: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The face aligned to `template` at size x size, and the 2x3 crop-from-frame affine (its inverse pastes back)."""
    matrix = align_matrix(points, template, size)
    return warp_to_crop(frame, matrix, size), matrix


def invert(crop_from_frame: np.ndarray) -> np.ndarray:
    """The 2x3 frame-from-crop affine."""
    return cv2.invertAffineTransform(np.asarray(crop_from_frame, dtype=np.float64).reshape(2, 3))


def transform_points(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    pts = np.asarray(points, dtype=np.float64)
    return pts[:, :2] @ np.asarray(matrix)[:, :2].T + np.asarray(matrix)[:, 2]


def landmarks_in_crop(landmarks: np.ndarray, crop_from_frame: np.ndarray) -> np.ndarray:
    """(N, 3) float32 mesh landmarks in crop pixels (z scaled like x and y)."""
    points = np.asarray(landmarks, dtype=np.float64)
    scale = float(np.sqrt(abs(np.linalg.det(np.asarray(crop_from_frame)[:, :2]))))
    return np.column_stack([transform_points(crop_from_frame, points), points[:, 2:] * scale]).astype(np.float32)

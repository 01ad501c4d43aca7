"""Measures of one face from dlib's 68 points: expression, pose, and the regions where a swap shows its faults.

Points (dlib's 68): 0-16 the jaw line, 17-21 and 22-26 the brows, 27-35 the nose (30 its tip), 36-41 and 42-47 the
eyes (image-left, image-right), 48-59 the outer lips, 60-67 the inner lips.

Sizes are in face heights: the distance from the brows' middle (the mean of 17-26) to the chin (8), which neither
an open mouth nor the eyes change much. Regions used to compare an output with its target are taken at the
target's points in both images, so the same pixels are compared.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

JAW = tuple(range(0, 17))
BROWS = tuple(range(17, 27))
EYES = (tuple(range(36, 42)), tuple(range(42, 48)))
INNER_LIPS = tuple(range(60, 68))
CHIN, NOSE_TIP = 8, 30
# Cheeks (image-left, image-right): jaw from ear to mouth level, mouth corner, nose wing, lower lid, outer corner.
CHEEKS = ((1, 2, 3, 4, 48, 31, 41, 36), (15, 14, 13, 12, 54, 35, 46, 45))
CLOSED_EYE = 0.2  # eye aspect ratio below which an eye counts as closed
FOREHEAD_GAP = 0.05  # the forehead band starts this far above the brows (their hairs are not forehead) ...
FOREHEAD_HEIGHT = 0.25  # ... and is this high, in face heights
EDGE_INSIDE, EDGE_OUTSIDE = 0.08, 0.02  # the paste-edge band either side of the pasted region's border, face heights
FRAME_DARKER = 40  # a frame pixel is this many grey levels darker than all of the target near it
FRAME_REACH = 2  # pixels: "near" for FRAME_DARKER (lets the lids and lashes move a little)
LIGHT_LINE_WIDTH = 7  # pixels: a thin light line (a lens's light lower rim) is narrower than this ...
LIGHT_LINE_BRIGHTER = 8  # ... and stands this many grey levels more above its surroundings than the target's there


def gray(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(np.float32)


def face_height(points: np.ndarray) -> float:
    return float(np.linalg.norm(points[list(BROWS)].mean(axis=0) - points[CHIN]))


def up_direction(points: np.ndarray) -> np.ndarray:
    """The unit vector from the chin toward the brows (the face's up, roll included)."""
    v = points[list(BROWS)].mean(axis=0) - points[CHIN]
    return v / max(float(np.linalg.norm(v)), 1e-9)


def eye_aspect_ratio(points: np.ndarray, eye: int) -> float:
    """Soukupova and Cech's EAR: the two lid distances over twice the corner distance (about 0.3 open, < 0.2
    closed). eye: 0 the image-left eye, 1 the image-right one."""
    p = points[list(EYES[eye])]
    lids = np.linalg.norm(p[1] - p[5]) + np.linalg.norm(p[2] - p[4])
    return float(lids / max(2.0 * np.linalg.norm(p[0] - p[3]), 1e-9))


def mouth_opening(points: np.ndarray) -> float:
    """The inner lips' mean vertical gap (61-67, 62-66, 63-65) in face heights: 0 closed, about 0.1 a laugh."""
    gaps = [np.linalg.norm(points[a] - points[b]) for a, b in ((61, 67), (62, 66), (63, 65))]
    return float(np.mean(gaps) / max(face_height(points), 1e-9))


def yaw_degrees(points: np.ndarray) -> float:
    """Head turn from the nose tip's place between the jaw line's ends (0 and 16), measured along the eye line: a
    head as a sphere with the nose on it, sin(yaw) = the tip's offset from the middle over the half width.
    Positive when the nose is nearer the image-right end (that cheek then is the far, foreshortened one)."""
    across = points[16] - points[0]
    across = across / max(float(np.linalg.norm(across)), 1e-9)
    left = float(np.dot(points[NOSE_TIP] - points[0], across))
    right = float(np.dot(points[16] - points[NOSE_TIP], across))
    ratio = (left - right) / max(left + right, 1e-9)
    return math.degrees(math.asin(max(-1.0, min(1.0, ratio))))


def roll_degrees(points: np.ndarray) -> float:
    """Head tilt in the image plane: the angle of the line from the image-left eye's centre to the other's."""
    left, right = (points[list(eye)].mean(axis=0) for eye in EYES)
    return math.degrees(math.atan2(right[1] - left[1], right[0] - left[0]))


def far_cheek(points: np.ndarray) -> int:
    """0 when the image-left cheek is the far one, 1 when the image-right one is."""
    return 1 if yaw_degrees(points) > 0 else 0


def polygon_mask(shape: tuple[int, int], polygon: np.ndarray) -> np.ndarray:
    mask = np.zeros(shape, np.uint8)
    cv2.fillPoly(mask, [np.round(polygon).astype(np.int32)], 1)
    return mask > 0


def cheek_mask(shape: tuple[int, int], points: np.ndarray, cheek: int) -> np.ndarray:
    """The cheek's polygon shrunk by a fifth toward its middle (no jaw edge, lid or nostril in it)."""
    poly = points[list(CHEEKS[cheek])]
    middle = poly.mean(axis=0)
    return polygon_mask(shape, middle + 0.8 * (poly - middle))


def lab_ab(image: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """Median CIELAB a*, b* (D65, true units) of the masked pixels."""
    lab = cv2.cvtColor(image.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)
    return float(np.median(lab[..., 1][mask])), float(np.median(lab[..., 2][mask]))


def forehead_band(shape: tuple[int, int], points: np.ndarray) -> np.ndarray:
    """The band above the brows (17-26), from FOREHEAD_GAP to FOREHEAD_GAP + FOREHEAD_HEIGHT face heights up:
    forehead where the hairline allows, where a source's fringe or hat lands."""
    up = up_direction(points) * face_height(points)
    brows = points[list(BROWS)]
    low, high = brows + FOREHEAD_GAP * up, brows + (FOREHEAD_GAP + FOREHEAD_HEIGHT) * up
    return polygon_mask(shape, np.vstack([low, high[::-1]]))


def mean_gray(image: np.ndarray, mask: np.ndarray) -> float:
    return float(gray(image)[mask].mean())


def gradient_magnitude(image: np.ndarray) -> np.ndarray:
    g = gray(image)
    return cv2.magnitude(cv2.Sobel(g, cv2.CV_32F, 1, 0, ksize=3), cv2.Sobel(g, cv2.CV_32F, 0, 1, ksize=3))


def pasted_region(output: np.ndarray, target: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Where the output differs from the target around this face: the connected region of changed pixels that
    holds the nose tip, its holes filled (eyes or a mouth kept from the target are inside the face, not its edge).
    Empty when the face was left alone."""
    changed = (output != target).any(axis=2).astype(np.uint8)
    _, labels = cv2.connectedComponents(changed)
    x, y = np.clip(np.round(points[NOSE_TIP]).astype(int), 0, [changed.shape[1] - 1, changed.shape[0] - 1])
    if labels[y, x] == 0:
        return np.zeros(changed.shape, bool)
    contours, _ = cv2.findContours((labels == labels[y, x]).astype(np.uint8), cv2.RETR_EXTERNAL,
                                   cv2.CHAIN_APPROX_NONE)
    filled = np.zeros(changed.shape, np.uint8)
    cv2.drawContours(filled, contours, -1, 1, -1)
    return filled > 0


def paste_edge_band(inside: np.ndarray, outside: np.ndarray, height: float, inside_from: float = 0.0,
                    inside_to: float = EDGE_INSIDE, outside_to: float = EDGE_OUTSIDE) -> np.ndarray:
    """The pasted region's border, from the distances `inside` and `outside` it (px, 0 off each side): from
    `inside_from` to `inside_to` face heights (`height`) inside it (a feathered seam's ramp; at least 2 px from the
    border) and `outside_to` face heights outside it (at least 1 px; 0 for none)."""
    band = (inside > inside_from * height) & (inside <= max(2.0, inside_to * height))
    if outside_to > 0:
        band |= (outside > 0) & (outside <= max(1.0, outside_to * height))
    return band


@dataclass(frozen=True)
class EdgeRatios:
    """Mean gradient magnitude, output over target, over the paste-edge band (`band`) and its two parts: the
    `outline` itself (EDGE_OUTSIDE either side of the pasted region's border), where a seam shows, and the face's
    `ring` inside it (from EDGE_OUTSIDE to EDGE_INSIDE in), where the swapped face's own folds, brows and jaw line
    count as well. 1.0 each for a face left alone."""

    band: float
    outline: float
    ring: float


def edge_ratios(output: np.ndarray, target: np.ndarray, points: np.ndarray) -> EdgeRatios:
    """Gradient along the paste edge (which runs inside the face outline, points 0-16, and across the forehead),
    output over target: a visible seam adds edges (> 1), a smeared border removes the target's own (< 1)."""
    region = pasted_region(output, target, points)
    if not region.any():
        return EdgeRatios(1.0, 1.0, 1.0)
    out_gradient, target_gradient = gradient_magnitude(output), gradient_magnitude(target)
    inside = cv2.distanceTransform(region.astype(np.uint8), cv2.DIST_L2, 5)
    outside = cv2.distanceTransform((~region).astype(np.uint8), cv2.DIST_L2, 5)
    height = face_height(points)

    def ratio(part: np.ndarray) -> float:
        if not part.any():
            return 1.0
        return float(out_gradient[part].mean() / max(float(target_gradient[part].mean()), 1e-6))

    return EdgeRatios(band=ratio(paste_edge_band(inside, outside, height)),
                      outline=ratio(paste_edge_band(inside, outside, height, inside_to=EDGE_OUTSIDE)),
                      ring=ratio(paste_edge_band(inside, outside, height, inside_from=EDGE_OUTSIDE, outside_to=0.0)))


def frame_zone(shape: tuple[int, int], target_points: np.ndarray, output_points: np.ndarray) -> np.ndarray:
    """Where glasses' rims and bridge sit: an ellipse around each eye (0.55 x 0.4 of the eye distance) less the
    eyes and brows of both faces (grown a little), which a swap may move."""
    centres = [target_points[list(eye)].mean(axis=0) for eye in EYES]
    distance = float(np.linalg.norm(centres[1] - centres[0]))
    zone = np.zeros(shape, np.uint8)
    for c in centres:
        cv2.ellipse(zone, (int(round(c[0])), int(round(c[1]))),
                    (int(round(0.55 * distance)), int(round(0.4 * distance))), 0, 0, 360, 1, -1)
    spared = np.zeros(shape, np.uint8)
    thick = max(2, int(round(0.12 * distance)))
    for points in (target_points, output_points):
        for eye in EYES:
            cv2.fillPoly(spared, [np.round(points[list(eye)]).astype(np.int32)], 1)
            cv2.polylines(spared, [np.round(points[list(eye)]).astype(np.int32)], True, 1, thick)
        for brow in (BROWS[:5], BROWS[5:]):
            cv2.polylines(spared, [np.round(points[list(brow)]).astype(np.int32)], False, 1, 2 * thick)
    return (zone > 0) & (spared == 0)


def new_dark_share(output: np.ndarray, target: np.ndarray, zone: np.ndarray) -> float:
    """The share of `zone` whose output is FRAME_DARKER levels darker than every target pixel within FRAME_REACH:
    dark frames (a source's glasses) that the target lacked there."""
    if not zone.any():
        return 0.0
    kernel = np.ones((2 * FRAME_REACH + 1, 2 * FRAME_REACH + 1), np.uint8)
    darker = gray(output) < cv2.erode(gray(target), kernel) - FRAME_DARKER
    return float(darker[zone].mean())


def new_light_lines(output: np.ndarray, target: np.ndarray, zone: np.ndarray) -> float:
    """The share of `zone` where the output has a thin light line (a white top-hat LIGHT_LINE_WIDTH wide) standing
    LIGHT_LINE_BRIGHTER levels higher than the target's there: light rims of a source's glasses (and the
    highlights of its wrinkles and lids, which any source brings)."""
    if not zone.any():
        return 0.0
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (LIGHT_LINE_WIDTH, LIGHT_LINE_WIDTH))
    lines = [cv2.morphologyEx(gray(image), cv2.MORPH_TOPHAT, kernel).astype(np.float32) for image in (output, target)]
    return float((lines[0] - lines[1] > LIGHT_LINE_BRIGHTER)[zone].mean())


def laplacian_variance(image: np.ndarray, mask: np.ndarray) -> float:
    return float(cv2.Laplacian(gray(image), cv2.CV_32F, ksize=1)[mask].var()) if mask.sum() > 20 else float("nan")

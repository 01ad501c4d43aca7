"""The outline of the source's glasses' lenses: where their rims run all round the eyes, light or tinted parts too.

A frame's dark top rim is found by its darkness (source_skin.py), but a lens's lower rim is often light, tan or clear:
about the skin's lightness, it came through the swap as a light outline of the lenses on the target. Each lens is
traced as one closed path around its eye, in polar coordinates about the eye's centre (in eye widths, along the
face's own axes): the path along which the image changes most sharply across the radius (a thin line of any colour),
moving smoothly from angle to angle (dynamic programming). Both lenses share one path, mirrored: glasses are
symmetric, and a wrinkle or an eye bag under one eye is not mirrored under the other. Computed once per source."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors.mesh_swap.mesh import SwapMesh

ANGLES = 120  # steps round each eye (3 degrees)
NEAREST, FARTHEST = 0.45, 1.4  # the lens's outline lies this far from the eye's centre, in eye widths
RADIUS_STEP = 0.5  # pixels between the radii looked at
MOST_RADIUS_STEPS = 2  # the outline moves by at most this many radii from one angle to the next
OUTLIER_SHARE = 95.0  # responses above this percentile are held to it: one dark spot does not pull the path


def traced_lenses(standard: np.ndarray, landmarks: np.ndarray, mesh: SwapMesh,
                  rim_width: float) -> tuple[np.ndarray, np.ndarray]:
    """Where the lenses' outlines run (1 on a band 2 `rim_width` wide along each) and what they enclose (1), float32,
    in an image whose pixels' CIELAB standard scores against the skin are `standard` (HxWx3), with FaceMesh
    `landmarks`: the one closed path per eye, shared by both eyes mirrored, along which the scores change most
    across the radius over `rim_width` pixels."""
    down = np.asarray(mesh.face_frame(landmarks).down, np.float32)
    across = np.array([-down[1], down[0]], np.float32)
    eyes = [mesh.ring_points(landmarks, name) for name in ("left_eye", "right_eye")]
    centres = [ring.mean(axis=0).astype(np.float32) for ring in eyes]
    widths = [float(np.ptp(ring @ across)) for ring in eyes]
    units = np.arange(NEAREST, FARTHEST, RADIUS_STEP / max(1.0, float(np.mean(widths))), dtype=np.float32)
    angles = np.linspace(0.0, 2.0 * np.pi, ANGLES, endpoint=False, dtype=np.float32)
    # The second eye's angles run the other way across the face: the mirror image of the first's.
    directions = [mirror * np.cos(angles)[:, None] * across + np.sin(angles)[:, None] * down for mirror in (1.0, -1.0)]
    response = sum(_line_response(standard, centre, width * units, direction, rim_width)
                   for centre, width, direction in zip(centres, widths, directions, strict=True))
    path = units[_smoothest_strongest_loop(np.asarray(response))]
    outlines, insides = np.zeros(standard.shape[:2], np.uint8), np.zeros(standard.shape[:2], np.uint8)
    thickness = max(1, int(round(2.0 * rim_width)))  # the line looked for spans the path +- rim_width
    for centre, width, direction in zip(centres, widths, directions, strict=True):
        points = np.round((centre + (path * width)[:, None] * direction) * 16).astype(np.int32)
        cv2.polylines(outlines, [points], True, 1, thickness, cv2.LINE_8, 4)
        cv2.fillPoly(insides, [points], 1, cv2.LINE_8, 4)
    return outlines.astype(np.float32), insides.astype(np.float32)


def _line_response(standard: np.ndarray, centre: np.ndarray, radii: np.ndarray, directions: np.ndarray,
                   width: float) -> np.ndarray:
    """(angles, radii): how sharply the scores change across the radius at each point, summed over L*, a*, b*
    (second difference over `width` pixels, a thin line lighter, darker or tinted), held below its OUTLIER_SHARE
    percentile."""
    scores = np.ascontiguousarray(standard, dtype=np.float32)

    def sampled(offset: float) -> np.ndarray:
        points = centre + (radii + np.float32(offset))[None, :, None] * directions[:, None, :]
        map_x, map_y = np.ascontiguousarray(points[..., 0]), np.ascontiguousarray(points[..., 1])
        # three channels at once: OpenCV interpolates them exactly (geometry.EXACT_REMAP_CHANNELS)
        return cv2.remap(scores, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)

    response = np.abs(2.0 * sampled(0.0) - sampled(-width) - sampled(width)).sum(axis=-1)
    return np.minimum(response, np.percentile(response, OUTLIER_SHARE)).astype(np.float32)


def _smoothest_strongest_loop(response: np.ndarray) -> np.ndarray:
    """For each angle (row of `response`), the radius index of the closed path with the largest summed response
    whose index moves by at most MOST_RADIUS_STEPS between neighbouring angles. Found over two turns, of which the
    middle turn is kept: its ends then meet (within a step or two)."""
    count, radii = response.shape
    steps = 2 * count
    total = response[0].copy()
    came_from = np.zeros((steps, radii), np.int32)
    indices = np.arange(radii)
    for step in range(1, steps):
        best = np.full(radii, -np.inf, np.float32)
        origin = np.zeros(radii, np.int32)
        for move in range(-MOST_RADIUS_STEPS, MOST_RADIUS_STEPS + 1):
            source = indices - move
            valid = (source >= 0) & (source < radii)
            candidate = np.full(radii, -np.inf, np.float32)
            candidate[valid] = total[source[valid]]
            better = candidate > best
            best[better], origin[better] = candidate[better], source[better]
        total = best + response[step % count]
        came_from[step] = origin
    path = np.zeros(steps, np.int32)
    path[-1] = int(np.argmax(total))
    for step in range(steps - 1, 0, -1):
        path[step - 1] = came_from[step, path[step]]
    middle = np.arange(count // 2, count // 2 + count)
    loop = np.empty(count, np.int32)
    loop[middle % count] = path[middle]
    return loop

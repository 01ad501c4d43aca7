"""Which of the source's pixels may be used: its skin and its features, not its hair, fringe or hat, nor (unless
asked) its glasses frames. Where the source shows something else, the target's own pixels stay (composition).

The source's skin colour is read on its cheeks (robust median and spread in CIELAB); a pixel clearly off that colour
is not skin where it is darker (hair, a hat's brim, dark frames; a highlight or a lens's tint is not taken for them)
or, on the forehead, yellower (fair hair; a paler forehead is skin). Only the forehead and temples (above the eyes)
and, when frames are removed, the glasses zone are looked at; the eyes and brows are the source's features and are
always used. Glasses with dark rims have their lenses traced (lenses.py): the whole outline is a frame, its light or
tan lower rims too, and what is lighter than the skin within a lens is a reflection on it. Computed once per
source."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_swap.glasses import darkness, glasses_zone, rims
from slimfuse.processors.mesh_swap.lenses import traced_lenses
from slimfuse.processors.mesh_swap.mesh import SwapMesh, face_extent
from slimfuse.processors.mesh_swap.seam import around
from slimfuse.processors.mesh_swap.tuning import MeshTuning

BROWS = ((46, 53, 52, 65, 55, 107, 66, 105, 63, 70), (276, 283, 282, 295, 285, 336, 296, 334, 293, 300))
"""FaceMesh's eyebrow vertices (MediaPipe's FACEMESH_RIGHT_EYEBROW and _LEFT_EYEBROW), each brow as a polygon."""
CHEEKS = (50, 280, 205, 425, 187, 411, 207, 427)
"""FaceMesh vertices on the cheeks, well below the eyes (clear of any frames) and of the nose: where the skin colour
is read."""
SMALLEST_SPREAD = np.array([3.0, 2.0, 2.0], np.float32)  # L*, a*, b*: a flat-lit skin still varies this much
SPARED_RAMP = 2.0  # pixels over which the always-used brows fade into what is not used: a step from used to not used
# between two pixels leaves a staircase of the source's pixels along a brow's edge in the swapped face (and so does
# a ramp measured on whole pixels: mask_ops.fine_edge)


def usable_source(image: np.ndarray, landmarks: np.ndarray, mesh: SwapMesh, tuning: MeshTuning,
                  remove_glasses: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """float32 maps of the source `image` (RGB uint8) with FaceMesh `landmarks`, soft-edged: where its pixels may
    be used (1), falling to 0 on hair, a hat or (`remove_glasses`) glasses frames; and the skin in the shadow of that
    hair or hat (1 on it, falling to 0 `hair_seam` face sizes from it; 0 on the eyes and brows, the source's
    features), or None if `hair_seam` is 0."""
    size = face_extent(landmarks)
    shape = image.shape[:2]
    lab = cv2.cvtColor(image.astype(np.float32) / np.float32(255.0), cv2.COLOR_RGB2Lab)
    standard = _skin_standard_scores(lab, landmarks, size)
    distance = np.sqrt(np.square(standard).sum(axis=2))
    off_colour = mask_ops.smoothstep((distance - tuning.not_skin_distance) / tuning.not_skin_ramp)
    darker = mask_ops.smoothstep(-(standard[..., 0] + tuning.not_skin_darker))
    yellower = mask_ops.smoothstep(standard[..., 2] - tuning.not_skin_darker)  # fair hair, not a paler forehead
    forehead, glasses, eyes, brows = _zones(landmarks, mesh, size, shape, tuning, remove_glasses)
    hair = off_colour * forehead * np.maximum(darker, yellower)
    frames = off_colour * glasses * darker
    if remove_glasses and tuning.lens_rim > 0 and rims(darkness(image, size, tuning), size, glasses > 0.5, tuning).any():
        # Glasses with dark rims: their lenses' whole outline is a frame, the light or tinted lower rims too, and
        # what is lighter than the skin within a lens is a reflection on it.
        outlines, insides = traced_lenses(standard, landmarks, mesh, tuning.lens_rim * size)
        lighter = mask_ops.smoothstep(standard[..., 0] - tuning.not_skin_darker)
        frames = np.maximum(frames, glasses * np.maximum(outlines, insides * off_colour * lighter))
    # A frame's top rim often runs along a brow: what is near black there is the rim, not the brow's hairs, and so
    # are its soft edges and highlights next to that (grown as the frames are): they left dashes along the brow.
    black = glasses * mask_ops.smoothstep(-(standard[..., 0] + tuning.frame_black))
    black = np.maximum(black, _grown(black, tuning.frame_grow * size))
    spared = np.maximum(eyes, brows * (1.0 - black))
    # Grown and softened: a strand's or a rim's soft edge, darker than the skin but not by enough, goes too, and
    # the target's skin shows through without a seam (the hair's shadow on the forehead with it; a frame's only a
    # little, since the lids and skin beside it are the source's likeness); the eyes and brows stay whole.
    hair = _grown(hair, tuning.hair_grow * size) * (1.0 - spared)
    usable = 1.0 - np.maximum(hair, _grown(frames, tuning.frame_grow * size) * (1.0 - spared))
    shadow = around(hair, tuning.hair_seam * size) * (1.0 - spared) if tuning.hair_seam > 0 else None
    return usable, shadow


def _grown(image: np.ndarray, grow: float) -> np.ndarray:
    """`image` dilated by about `grow` pixels and blurred by as much."""
    image = cv2.dilate(image, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3)), iterations=max(1, round(grow)))
    return cv2.GaussianBlur(image, (0, 0), max(0.5, grow))


def _skin_standard_scores(lab: np.ndarray, landmarks: np.ndarray, size: float) -> np.ndarray:
    """Each pixel's CIELAB standard score against the skin of the cheeks (median and scaled MAD, per channel)."""
    samples = np.zeros(lab.shape[:2], np.uint8)
    radius = max(2, int(round(0.04 * size)))
    for vertex in CHEEKS:
        x, y = np.round(landmarks[vertex, :2]).astype(int)
        cv2.circle(samples, (int(x), int(y)), radius, 1, -1)
    skin = lab[samples > 0]
    if len(skin) < 8:  # the cheeks are outside the image: nothing is known of the skin
        return np.zeros_like(lab)
    middle = np.median(skin, axis=0)
    spread = np.maximum(1.4826 * np.median(np.abs(skin - middle), axis=0), SMALLEST_SPREAD)
    return (lab - middle) / spread


def _zones(landmarks: np.ndarray, mesh: SwapMesh, size: float, shape: tuple[int, int], tuning: MeshTuning,
           remove_glasses: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where something other than skin is looked for, float32 each: the forehead and temples (above the eyes,
    outside the glasses zone), where what is off the skin's colour and darker or yellower is hair or a hat (a paler
    forehead is not); the glasses zone if `remove_glasses` (else 0), where only what is also darker than the skin
    is a frame (a lens's tint and a highlight are not). And the features, which are the source's: the eyes
    (soft-edged) and the brows."""
    frame = mesh.face_frame(landmarks)
    eyes = [mesh.ring_points(landmarks, name) for name in ("left_eye", "right_eye")]
    eye_line = np.mean([ring.mean(axis=0) for ring in eyes], axis=0)
    rows, columns = np.mgrid[0:shape[0], 0:shape[1]].astype(np.float32)
    above_eyes = (columns - eye_line[0]) * frame.down[0] + (rows - eye_line[1]) * frame.down[1] < 0
    glasses = glasses_zone(landmarks, mesh, size, shape, tuning.rims_reach, tuning)  # soft-edged
    eyes_grown = mask_ops.polygons_signed_distance(shape, eyes, 0.05 * size)
    forehead = (above_eyes & (glasses <= 0.5)).astype(np.float32)
    return (forehead, (glasses if remove_glasses else np.zeros(shape, np.float32)),
            mask_ops.soft_from_distance(shape, eyes_grown, 0.03 * size, 1.0), spared_brows(landmarks, size, shape))


def spared_brows(landmarks: np.ndarray, size: float, shape: tuple[int, int]) -> np.ndarray:
    """The brows (float32), always used: 1 on them, falling to 0 over the SPARED_RAMP pixels outside them that end
    1 % of the face past their outline (where their hard edge was: what is used reaches no further into a fringe),
    or SPARED_RAMP past it on a small face."""
    return mask_ops.soft_polygons(shape, [landmarks[list(brow), :2] for brow in BROWS],
                                  max(SPARED_RAMP, round(0.01 * size)) - SPARED_RAMP / 2, SPARED_RAMP,
                                  mask_ops.fine_edge(SPARED_RAMP))

"""Composition: how much of the rendered face shows over the target, and the blend.

The outer mask is the face's front-facing coverage, eroded and feathered by fractions of the face size (more at the
forehead and the jaw, where the mesh edge is least reliable); the target keeps its own pixels where it is 0, in the
kept regions (a mouth interior, eyes, the eye region, the source's eyes on a shut eye), where the source's texture
is not trusted, and under its own glasses (`keep_occluders`). The blend is feathered alpha by default, or Poisson
(`cv2.seamlessClone`)."""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.config import SwapOptions
from slimfuse.processors import blend as blend_ops
from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_swap.glasses import glasses_zone
from slimfuse.processors.mesh_swap.mesh import SwapMesh, face_extent, ring_opening
from slimfuse.processors.mesh_swap.tuning import MeshTuning

SMALLEST_ALPHA = 1.0 / 512  # an alpha below this is 0: it would not change an 8-bit pixel


def outer_mask(coverage: np.ndarray, frame: mask_ops.FaceFrame, origin: tuple[int, int],
               tuning: MeshTuning) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The face's `coverage` (of a region at `origin` in the crop), eroded and feathered; the border zone where
    the target's fine detail is carried in fully (1 from the mask edge to `detail_border` inside it, fading to 0
    over as much); the seam, where the face takes the target's light (1 over the feathered ramp, fading to 0 over
    `seam_fade` ramps further in); and the grain zone, where its grain is held to the target's (the same, fading
    over `seam_grain_fade` ramps)."""
    size = frame.size
    erosion = mask_ops.vertical_erosion(coverage.shape, origin, frame, tuning.mask_erode * size,
                                        tuning.mask_erode_top * size, tuning.mask_erode_bottom * size)
    inside = mask_ops.inside_distance(coverage) - erosion
    ramp = np.float32(tuning.mask_feather * size)
    outer = mask_ops.smoothstep(inside / ramp)
    reach = np.float32(tuning.detail_border * size)
    border = 1.0 - mask_ops.smoothstep((inside - reach) / max(reach, np.float32(1e-3)))
    seam, grain = (1.0 - mask_ops.smoothstep((inside - ramp) / max(np.float32(fade) * ramp, np.float32(1e-3)))
                   for fade in (tuning.seam_fade, tuning.seam_grain_fade))
    return outer, border, seam, grain


def kept_regions(vertices: np.ndarray, mesh: SwapMesh, frame: mask_ops.FaceFrame, shape: tuple[int, int],
                 keep_lips: bool, shut: float, options: SwapOptions,
                 tuning: MeshTuning) -> tuple[np.ndarray, np.ndarray | None]:
    """Where the target stays (float32, soft-edged): its mouth interior (`keep_mouth`), its whole lips (`keep_lips`:
    its mouth is closed and the source's open, so its seam stays and no teeth are squeezed in), its eye region
    (eye_region "target"), its eyes (`keep_eyes`) and, as far as they are `shut` (0-1), its eyes' lid lines with
    their lashes (not the source's iris squeezed in). And those lid lines' region in full (None unless shut)."""
    size = frame.size
    kept = np.zeros(shape, np.float32)
    mouth = mesh.ring_points(vertices, "lips_inner")
    if keep_lips:
        feather = max(1.5, tuning.hole_feather * size)
        kept = mask_ops.soft_polygons(shape, [mouth], tuning.lips_keep_grow * size, feather,
                                      mask_ops.fine_edge(feather))
    elif options.keep_mouth:
        # The soft edge is at most half the opening: a closed mouth keeps only its seam.
        feather = max(1.0, min(tuning.hole_feather * size, 0.5 * ring_opening(mouth, frame.down)))
        kept = mask_ops.soft_polygons(shape, [mouth], 0.25 * feather, feather, mask_ops.fine_edge(feather))
    if options.eye_region == "target":
        kept = np.maximum(kept, glasses_zone(vertices, mesh, size, shape, tuning.glasses_reach, tuning))
    feather = max(1.0, tuning.hole_feather * size)
    # Kept eyes with their lids and lashes: the blend edge lies on skin, not on the (often red) lid rims.
    eyes = [mesh.ring_points(vertices, eye) for eye in ("left_eye", "right_eye")]
    if options.keep_eyes:
        return np.maximum(kept, mask_ops.soft_polygons(shape, eyes, tuning.eye_keep_grow * size, feather,
                                                       mask_ops.fine_edge(feather))), None
    if shut <= 0:
        return kept, None
    lids = mask_ops.soft_polygons(shape, eyes, tuning.shut_eye_grow * size, feather, mask_ops.fine_edge(feather))
    return np.maximum(kept, np.float32(shut) * lids), lids


def source_eyes(source_vertices: np.ndarray, mesh: SwapMesh, eyes: tuple[str, ...], map_x: np.ndarray,
                map_y: np.ndarray, tuning: MeshTuning) -> np.ndarray:
    """Where the source's `eyes` land on the target (float32, soft-edged): their lid rings among the source's
    `source_vertices`, grown by `shut_source_eye_grow` of the source face, read through the maps to the source. A
    shut target eye keeps its own pixels there: its lid line covers the source's lid ring, but the source's lashes,
    lid crease and the rest of an open eye around the ring would still show above and below it."""
    if not eyes:
        return np.zeros(map_x.shape, np.float32)
    size = face_extent(source_vertices)
    grow, feather = tuning.shut_source_eye_grow * size, max(1.0, tuning.hole_feather * size)
    rings = [mesh.ring_points(source_vertices, eye) for eye in eyes]
    # Drawn on the rings' box only: the source image may be a magnified copy many times the face's size.
    low = np.floor(np.min([ring.min(0) for ring in rings], axis=0) - grow - feather).astype(int)
    high = np.ceil(np.max([ring.max(0) for ring in rings], axis=0) + grow + feather).astype(int)
    drawn = mask_ops.soft_polygons((int(high[1] - low[1]), int(high[0] - low[0])), [ring - low for ring in rings],
                                   grow, feather, mask_ops.fine_edge(feather))
    return cv2.remap(drawn, map_x - np.float32(low[0]), map_y - np.float32(low[1]), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)


def face_alpha(outer: np.ndarray, kept: np.ndarray, trust: np.ndarray, in_front: np.ndarray | None,
               painted: np.ndarray) -> np.ndarray:
    """The blend weight of the rendered face (float32): the outer mask, less the kept regions, the texture not
    trusted and what stays `in_front` (the target's glasses); 0 off the mesh and where it would change nothing."""
    alpha = outer * (1.0 - kept) * trust
    if in_front is not None:
        alpha *= 1.0 - in_front
    alpha[~painted] = 0.0
    alpha[alpha < SMALLEST_ALPHA] = 0.0
    return alpha


def with_target_in_front(base: np.ndarray, original: np.ndarray, in_front: np.ndarray) -> np.ndarray:
    """`base` with the `original` target (unmoved by the shape transfer) where it stays `in_front` (uint8)."""
    share = in_front[..., None]
    return np.rint(base * (1.0 - share) + original * share).astype(np.uint8)


def changed_alpha(alpha: np.ndarray, outer: np.ndarray, moved: np.ndarray) -> np.ndarray:
    """Where the result differs from the crop (float32): the face's alpha, and the outer mask where the shape
    transfer only moved the target's pixels."""
    return np.maximum(alpha, np.where(moved, outer, np.float32(0.0))).astype(np.float32)


def blended(base: np.ndarray, face: np.ndarray, alpha: np.ndarray, options: SwapOptions,
            tuning: MeshTuning) -> np.ndarray:
    """The colour-corrected `face` blended over `base` by `alpha`: feathered, or Poisson (options.blend)."""
    if options.blend == "poisson":
        return blend_ops.poisson_blend(base, face, alpha, max_shift=tuning.poisson_max_shift)
    return blend_ops.feather_blend(base, face, alpha)

"""Landmark-mesh face swap: the source face's texture, warped onto the target's 468-point FaceMesh.

No neural generator. Per target face:

1. Both meshes share one fixed triangulation (`MeshTopology`, 852 triangles) plus fans that close the eye and
   mouth holes around their ring centroids (904 triangles in all).
2. The target crop's face region is rasterised once into a triangle-id image (back-facing triangles first,
   then front-facing ones from far to near, so nearer triangles win where the face folds over itself); each
   pixel's source position follows from its triangle's affine map, and one `cv2.remap` renders the source
   texture (from a pyramid level of the source near the target's scale, so it is not aliased).
3. Triangles that face away from the camera in the target are not part of the mask (target pixels stay);
   triangles that the source sees much more obliquely than the target does (stretched texture) fade out of
   the mask too.
4. Colour: a wide, skin-only low-frequency gain (see `color.py`) gives the source the target's lighting; it is
   damped on the lips and eyes so they keep their colour.
5. Mask: the covered face region, eroded and feathered by fractions of the face size (more at the forehead
   and the jaw, where the mesh edge is least reliable), with the target's mouth interior cut out by default.
6. Shape transfer (default 0.7): the target's inner features (eyes, brows, nose, lip outline) move part of
   the way toward the source's proportions, measured after a 3-D similarity alignment of the two meshes so
   head pose is not mistaken for shape. The shift is 0 on the face outline and on a kept mouth, fades out
   with the mask, and moves the target pixels under the feathered edge along with the face, so nothing
   ghosts. Texture alone leaves the target's feature layout, which the identity embedding weighs heavily.
7. Fine detail: the skin's finest luma band is brought near the target's (a wrinkled source on a smooth face
   damped to about twice the target's energy; a smaller, magnified source topped up with the target's texture,
   fully near the mask border so the grain runs on across it). Texture moved by a fraction of a pixel (the warp
   of a same-scale source, the target under the shape transfer) keeps its pixel-scale grain.
8. Glasses (both optional): `keep_occluders` keeps rim-like lines of the target's eye region (thin, clearly darker
   than their surroundings, long, and not in the warped source) in front of the swapped face;
   `remove_source_glasses` fills such lines in the source, eyes spared, from the skin around them before the warp.
9. Blend: feathered alpha by default, or Poisson (`cv2.seamlessClone`) inside a tight mask.

Everything runs on the face's bounding region of the crop; pixels where the returned alpha is 0 are the
input crop's, bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from slimfuse.config import SwapOptions
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.processors import blend as blend_ops
from slimfuse.processors import color as color_ops
from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_swap.geometry import Region, affine_tables, face_region, remap_keeping_grain, warp_source
from slimfuse.processors.mesh_swap.glasses import glasses_zone, occluders, without_glasses
from slimfuse.processors.mesh_swap.mesh import SwapMesh, checked_landmarks, ring_opening
from slimfuse.processors.mesh_swap.shape_transfer import ShapeTransfer, sample_points
from slimfuse.processors.mesh_swap.source import ScaledSource, SourceFace, cut_out_source, scaled_source
from slimfuse.processors.mesh_swap.visibility import facing_coverage, texture_trust, visible_mesh
from slimfuse.processors.mesh_swap.tuning import MeshTuning

_BOX_MARGIN = 4  # pixels kept around the outer mask's box (the shape transfer samples a little beyond it)


@dataclass(frozen=True, eq=False)
class SwapLayers:
    """What `MeshSwapper.layers` computed for one face, on the crop's face region `box` (x0, y0, x1, y1).

    base: uint8 target region the face is blended onto (the target itself, or moved by the shape transfer);
    warped: uint8 source texture rendered on the target mesh; corrected: float32 `warped` after the colour
    step; alpha: float32 blend weight of `corrected` over `base`; changed: float32 alpha returned by
    `swap_crop` (alpha, and also pixels only moved by the shape transfer); color_weight: float32 where the
    colour statistics were taken; level: the source pyramid level used."""

    box: tuple[int, int, int, int]
    base: np.ndarray
    warped: np.ndarray
    corrected: np.ndarray
    alpha: np.ndarray
    changed: np.ndarray
    color_weight: np.ndarray
    level: int


@dataclass(frozen=True, eq=False)
class Footprint:
    """Where one target face lies in its crop, cut to its outer mask's box: `region` (with the target's vertices),
    `drawable` (T,) triangles not degenerate, and the region's images: `triangle_ids` (the triangle seen), `trust`
    (of the source's texture), `outer` (the mask at the face's edge) and `border` (its detail zone)."""

    region: Region
    drawable: np.ndarray
    triangle_ids: np.ndarray
    trust: np.ndarray
    outer: np.ndarray
    border: np.ndarray


class MeshSwapper:
    """Swap faces with a fixed mesh topology; see the module docstring."""

    def __init__(self, topology: MeshTopology, options: SwapOptions = SwapOptions(),
                 tuning: MeshTuning = MeshTuning()) -> None:
        self.topology = topology
        self.options = options
        self.tuning = tuning
        self.mesh = SwapMesh.of(topology)
        self.shape_transfer = ShapeTransfer.of(self.mesh, options, tuning)

    # ------------------------------------------------------------------------------------------ source

    def prepare_source(self, image: np.ndarray, landmarks: np.ndarray) -> SourceFace:
        """Cut the source face (with a margin) out of `image`, scaled down if it is larger than
        `options.max_source_face`, and build its pyramid. image: RGB uint8; landmarks: (468, 3) pixels."""
        crop, local = cut_out_source(image, landmarks, self.tuning.max_source_face)
        if self.options.remove_source_glasses:
            crop = without_glasses(crop, local, self.mesh, self.tuning)
        return SourceFace(image=crop, landmarks=local)

    # ------------------------------------------------------------------------------------------- swap

    def swap_crop(self, crop: np.ndarray, landmarks: np.ndarray, source: SourceFace) -> tuple[np.ndarray, np.ndarray]:
        """Swap the face in `crop` (RGB uint8) whose FaceMesh `landmarks` (468, 3) are in crop pixels.

        Returns (swapped RGB uint8 of crop's shape, alpha float32 HxW in [0, 1] marking where the result
        differs from `crop`); where alpha is 0 the swapped crop equals `crop` exactly."""
        layers = self.layers(crop, landmarks, source)
        out = crop.copy()
        alpha_full = np.zeros(crop.shape[:2], dtype=np.float32)
        if layers is None:
            return out, alpha_full
        x0, y0, x1, y1 = layers.box
        if self.options.blend == "poisson":
            blended = blend_ops.poisson_blend(layers.base, layers.corrected, layers.alpha,
                                               max_shift=self.tuning.poisson_max_shift)
        else:
            blended = blend_ops.feather_blend(layers.base, layers.corrected, layers.alpha)
        # The contract, whatever the blend did: the crop's own pixels wherever nothing changed.
        np.copyto(blended, crop[y0:y1, x0:x1], where=(layers.changed == 0)[..., None])
        out[y0:y1, x0:x1] = blended
        alpha_full[y0:y1, x0:x1] = layers.changed
        return out, alpha_full

    def layers(self, crop: np.ndarray, landmarks: np.ndarray, source: SourceFace) -> SwapLayers | None:
        """The intermediate images of `swap_crop` (before blending), or None if no face pixel is covered."""
        if crop.ndim != 3 or crop.shape[2] != 3 or crop.dtype != np.uint8:
            raise ValueError("crop must be an RGB uint8 HxWx3 array")
        opt = self.tuning
        target_landmarks = checked_landmarks(landmarks)
        region = face_region(target_landmarks, self.mesh.with_hole_centres(target_landmarks), crop.shape[:2])
        if region is None:
            return None
        frame = self.mesh.face_frame(target_landmarks)
        size = frame.size
        scaled = scaled_source(source, target_landmarks, self.mesh, opt.magnify_sharpen, opt.closed_mouth)
        footprint = self._footprint(region, frame, scaled)
        if footprint is None:
            return None
        region = footprint.region
        vt_roi = region.vertices
        outer, border = footprint.outer, footprint.border
        ids, trust_px = footprint.triangle_ids, footprint.trust
        level = scaled.level

        # Per-triangle affine maps from target (ROI) pixels to source pixels and to the shape-transfer shift.
        keep_lips = (self.options.keep_mouth and self.mesh.mouth_closed(target_landmarks, frame, opt.closed_mouth)
                     and not scaled.mesh.mouth_closed)
        shift_v = (self.shape_transfer.vertex_shift(vt_roi, scaled.mesh.vertices, size, keep_lips)
                   if opt.shape_transfer > 0 else None)
        coef_src, coef_shift = affine_tables(self.mesh.triangles, vt_roi, scaled.mesh.corners, shift_v,
                                             footprint.drawable)
        keep, not_skin, damping = self._feature_masks(vt_roi, frame, region.shape, keep_lips)

        target_roi = original = region.of(crop)
        points = sample_points(coef_shift, ids, outer)
        moved = points.moved
        if points.any_moved:
            ids = points.triangle_ids(ids)
            keep, trust_px, not_skin, damping = points.resampled(keep, trust_px, not_skin, damping)
            target_roi = remap_keeping_grain(target_roi, points.x, points.y)
        painted = ids > 0
        warped = warp_source(scaled.image, coef_src, ids, points.x, points.y, scaled.magnification > 1,
                             opt.interpolation)

        alpha = outer * (1.0 - keep) * trust_px
        if self.options.keep_occluders:
            # The target's glasses stay in front: unmoved, over the swapped face.
            occl = occluders(original, warped, vt_roi, self.mesh, size, opt) * (outer > 0)
            alpha *= 1.0 - occl
            o = occl[..., None]
            target_roi = np.rint(target_roi * (1.0 - o) + original * o).astype(np.uint8)
        alpha[~painted] = 0.0
        alpha[alpha < 1.0 / 512] = 0.0
        alpha_out = np.maximum(alpha, np.where(moved, outer, np.float32(0.0))).astype(np.float32)
        if not alpha_out.any():
            return None

        # Colour: statistics on the skin only (no lips, mouth, eyes); the gain is damped on lips and eyes.
        weight = outer * (1.0 - not_skin) * trust_px
        weight[~painted] = 0.0
        if float(weight.sum()) < 1.0:
            weight = alpha.copy() + 1e-6
        corrected = color_ops.match_low_frequency(
            warped, target_roi, weight, opt.color_sigma * frame.eye_distance, opt.color_strength,
            damping * np.float32(opt.feature_color_damping))

        # Fine detail at the target's level: a wrinkled source on a smooth face has its finest band damped, and
        # a smaller (magnified) source, lacking the target's pore-scale band, gets the target's own band carried
        # in (on skin only, in luma only). Either way the skin's texture matches across the mask border.
        corrected = self._match_detail(corrected, target_roi, weight, not_skin, border, scaled.level_ratio)
        return SwapLayers(
            box=region.box, base=np.ascontiguousarray(target_roi), warped=warped, corrected=corrected,
            alpha=alpha, changed=alpha_out, color_weight=weight, level=level)

    def _footprint(self, region: Region, frame: mask_ops.FaceFrame, scaled: ScaledSource) -> Footprint | None:
        """Where the face lies in `region`: the triangles seen, the texture's trust and the outer mask, cut to the
        mask's box (None if nothing of the face is seen)."""
        visible = visible_mesh(self.mesh.triangles, region.vertices, region.shape)
        if not visible.triangle_ids.any():
            return None
        trust = texture_trust(visible, scaled.mesh.areas, scaled.area_ratio, frame.size, self.tuning.max_stretch)
        outer, border = self._outer_mask(facing_coverage(visible, frame.size), frame, region.origin)
        # Nothing changes where the outer mask is 0 (the shift fades out with it too), so the rest works on its
        # bounding box, a few pixels wider for the shape transfer's reach there: about a third fewer pixels.
        face = region.around(outer > 0, _BOX_MARGIN)
        if face is None:
            return None
        window = face.within(region)
        return Footprint(region=face, drawable=visible.drawable, triangle_ids=visible.triangle_ids[window],
                         trust=trust[window], outer=outer[window], border=border[window])

    # -------------------------------------------------------------------------------------- helpers

    def _match_detail(self, corrected: np.ndarray, target: np.ndarray, weight: np.ndarray, not_skin: np.ndarray,
                      border: np.ndarray, magnify: float) -> np.ndarray:
        """`corrected` with its finest luma band (blur sigma 0.5 x magnify, at least 1 px) scaled on the skin so
        its energy there is near the target's: damped (down to `detail_floor`) to twice the target's where the
        source has more, and topped up with the target's own band where it has less: at most `detail_transfer`
        of it inside the face (more carries the target's identity), up to the target's energy in the `border`
        zone, so the skin's grain runs on across the mask edge; its local energy held to `detail_texture` times
        the typical."""
        opt = self.tuning
        sigma = max(1.0, 0.5 * magnify)
        luma_t = color_ops.luma(target)
        luma_s = color_ops.luma(corrected)
        band_t = luma_t - cv2.GaussianBlur(luma_t, (0, 0), sigma)
        band_s = luma_s - cv2.GaussianBlur(luma_s, (0, 0), sigma)
        skin = (weight > 0.5 * float(weight.max())) & (not_skin < 0.5)
        count = int(np.count_nonzero(skin))
        if count < 16:
            return corrected
        flat_skin = skin.ravel().astype(np.float32)
        e_t = float(np.dot(flat_skin, np.square(band_t).ravel())) / count
        e_s = float(np.dot(flat_skin, np.square(band_s).ravel())) / count
        if e_s > 2.0 * e_t:  # up to twice the target's passes: it reads as the same kind of skin
            gain = max(opt.detail_floor, math.sqrt(2.0 * e_t / e_s))
            delta = np.float32(gain - 1.0) * band_s
        elif e_s < e_t:
            full = math.sqrt(1.0 - e_s / max(e_t, 1e-6))
            inner = min(opt.detail_transfer, full)
            # Texture only: where the band's local energy is far above the skin's typical (an edge of the target's
            # own features, which would ghost over the source's and pull the identity back), it is scaled down.
            local = cv2.GaussianBlur(np.square(band_t), (0, 0), 2.0 * sigma)
            # The median of every other pixel each way: `local` is blurred well past that spacing, so it is the
            # same level at a quarter of the cost.
            sample = local[::2, ::2][skin[::2, ::2]]
            typical = np.float32(opt.detail_texture * _median(sample if sample.size else local[skin]))
            texture = band_t * np.sqrt(np.minimum(1.0, typical / np.maximum(local, 1e-6)))
            delta = (np.float32(full - inner) * border + np.float32(inner)) * texture
        else:
            return corrected
        delta *= 1.0 - not_skin
        corrected += cv2.merge([delta, delta, delta])  # numpy's broadcast over channels is several times slower
        return np.clip(corrected, 0.0, 255.0, out=corrected)

    def _outer_mask(self, coverage: np.ndarray, frame: mask_ops.FaceFrame,
                    origin: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Front-facing coverage, eroded and feathered; and the border zone where the target's fine
        detail is carried in fully (1 from the mask edge to `detail_border` inside it, fading to 0 over as much)."""
        opt, size = self.tuning, frame.size
        erosion = mask_ops.vertical_erosion(
            coverage.shape, origin, frame, opt.mask_erode * size, opt.mask_erode_top * size, opt.mask_erode_bottom * size)
        inside = mask_ops.inside_distance(coverage) - erosion
        outer = mask_ops.smoothstep(inside / np.float32(opt.mask_feather * size))
        reach = np.float32(opt.detail_border * size)
        border = 1.0 - mask_ops.smoothstep((inside - reach) / max(reach, np.float32(1e-3)))
        return outer, border

    def _feature_masks(self, vt_roi: np.ndarray, frame: mask_ops.FaceFrame, shape: tuple[int, int],
                       keep_lips: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Kept target regions (mouth interior, eyes), and where the facial features are (not skin, for the
        colour statistics; damping, where the colour gain is damped). keep_lips: the target's mouth is closed
        and the source's open: the target's lips stay whole (a closed mouth, its seam, no teeth squeezed in)."""
        opt, rings, size = self.tuning, self.mesh.rings, frame.size
        keep = np.zeros(shape, np.float32)
        if keep_lips:
            keep = mask_ops.soft_polygons(shape, [vt_roi[rings["lips_inner"], :2]], opt.lips_keep_grow * size,
                                          max(1.5, opt.hole_feather * size))
        elif self.options.keep_mouth:
            poly = vt_roi[rings["lips_inner"], :2]
            # The soft edge is at most half the opening: a closed mouth keeps only its seam.
            hole_f = max(1.0, min(opt.hole_feather * size, 0.5 * ring_opening(poly, frame.down)))
            keep = mask_ops.soft_polygons(shape, [poly], 0.25 * hole_f, hole_f)
        if self.options.eye_region == "target":
            keep = np.maximum(keep, glasses_zone(vt_roi, self.mesh, size, shape, opt.glasses_reach, opt))
        if self.options.keep_eyes:
            # The eye with its lids and lashes: the blend edge lies on skin, not on the (often red) lid rims.
            grow = opt.eye_keep_grow * size
            hole_f = max(1.0, opt.hole_feather * size)
            for name in ("left_eye", "right_eye"):
                keep = np.maximum(keep, mask_ops.soft_polygons(shape, [vt_roi[rings[name], :2]], grow, hole_f))
        feature_polys = [vt_roi[rings[k], :2] for k in ("lips_outer", "left_eye", "right_eye")]
        feature_sd = mask_ops.polygons_signed_distance(shape, feature_polys, 0.04 * size)
        not_skin = mask_ops.soft_from_distance(shape, feature_sd, 0.02 * size, 0.03 * size)
        damping = mask_ops.soft_from_distance(shape, feature_sd, 0.005 * size, 0.02 * size)
        return keep, not_skin, damping

def _median(values: np.ndarray) -> float:
    """np.median of a flat float32 array, to the bit, from one partition (np.median's checks cost more than that
    on a few thousand values)."""
    half = values.size // 2
    if values.size % 2:
        return float(np.partition(values, half)[half])
    part = np.partition(values, [half - 1, half])
    return float((part[half - 1] + part[half]) / values.dtype.type(2))

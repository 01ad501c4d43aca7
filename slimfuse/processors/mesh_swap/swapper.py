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
from slimfuse.processors.mesh_swap.glasses import glasses_zone, occluders, without_glasses
from slimfuse.processors.mesh_swap.mesh import HOLES, SwapMesh, checked_landmarks, doubled_areas, ring_opening
from slimfuse.processors.mesh_swap.source import SourceFace, cut_out_source, scaled_source
from slimfuse.processors.mesh_swap.tuning import MeshTuning
from slimfuse.processors.raster import triangle_labels

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


class MeshSwapper:
    """Swap faces with a fixed mesh topology; see the module docstring."""

    def __init__(self, topology: MeshTopology, options: SwapOptions = SwapOptions(),
                 tuning: MeshTuning = MeshTuning()) -> None:
        self.topology = topology
        self.options = options
        self.tuning = tuning
        self.mesh = SwapMesh.of(topology)
        n = topology.num_vertices
        self._rings = self.mesh.rings
        self._holes = HOLES
        self._triangles = self.mesh.triangles
        # Shape-transfer weight per vertex: 0 on the outline, full `shape_rings` mesh rings inside it; pinned
        # to 0 on the kept mouth (and its ring of neighbours) and on kept eyes.
        tri = np.asarray(topology.triangles, dtype=np.int64)
        weight = mask_ops.smoothstep(_ring_distance(tri, n, self._rings["oval"]) / tuning.shape_rings)
        if options.keep_mouth:
            weight = np.minimum(weight, mask_ops.smoothstep(_ring_distance(tri, n, self._rings["lips_inner"]) / 2))
        if options.keep_eyes:
            for name in ("left_eye", "right_eye"):
                weight = np.minimum(weight, mask_ops.smoothstep(_ring_distance(tri, n, self._rings[name]) / 2))
        self._shape_weight = weight.astype(np.float64)
        # A closed target mouth under an open source mouth keeps the target's lips: the shift is 0 on them too.
        lips = mask_ops.smoothstep(_ring_distance(tri, n, self._rings["lips_outer"]) / 2)
        self._shape_weight_lips = np.minimum(weight, lips).astype(np.float64)

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
        H, W = crop.shape[:2]
        lt = checked_landmarks(landmarks)
        frame = self.mesh.face_frame(lt)
        size = frame.size

        # Region of interest: the mesh's bounding box in the crop.
        lo = np.floor(lt[:, :2].min(0)).astype(int) - 2
        hi = np.ceil(lt[:, :2].max(0)).astype(int) + 3
        x0, y0 = max(int(lo[0]), 0), max(int(lo[1]), 0)
        x1, y1 = min(int(hi[0]), W), min(int(hi[1]), H)
        if x1 - x0 < 4 or y1 - y0 < 4:
            return None
        rh, rw = y1 - y0, x1 - x0

        # Source pyramid level close to (not below) the target's scale; a source face smaller than the target's
        # is magnified once (Lanczos, cached on the SourceFace) and then warped with a sharp kernel.
        scaled = scaled_source(source, lt, self.mesh, opt.magnify_sharpen, opt.closed_mouth)
        ratio, level, up, src_img, mesh = scaled.ratio, scaled.level, scaled.magnification, scaled.image, scaled.mesh

        vt = self.mesh.with_hole_centres(lt)
        vs = mesh.vertices
        vt_roi = vt.copy()
        vt_roi[:, 0] -= x0
        vt_roi[:, 1] -= y0

        tris = self._triangles
        area2_t = doubled_areas(vt_roi[tris])
        area2_s = mesh.areas
        drawable = np.abs(area2_t) > 1e-2
        front = area2_t > 1e-2

        # Rasterise triangle ids on the target mesh: back-facing first, then front-facing from far to near.
        ids = self._rasterise(vt_roi, drawable, front, (rh, rw))
        painted0 = ids > 0
        if not painted0.any():
            return None

        trust_px = self._texture_trust(ids, area2_t, area2_s, (ratio * 2.0**level / up) ** 2, size)
        outer, border = self._outer_mask(ids, front, frame, (x0, y0), (rh, rw))

        # Nothing changes where the outer mask is 0 (the shift fades out with it too), so the rest works on its
        # bounding box, a few pixels wider for the shape transfer's reach there: about a third fewer pixels.
        bx, by, bw, bh = cv2.boundingRect((outer > 0).astype(np.uint8))
        if bw == 0 or bh == 0:
            return None
        bx0, by0 = max(bx - _BOX_MARGIN, 0), max(by - _BOX_MARGIN, 0)
        bx1, by1 = min(bx + bw + _BOX_MARGIN, rw), min(by + bh + _BOX_MARGIN, rh)
        ids, trust_px, outer, border = (a[by0:by1, bx0:bx1] for a in (ids, trust_px, outer, border))
        x0, y0, x1, y1 = x0 + bx0, y0 + by0, x0 + bx1, y0 + by1
        rh, rw = y1 - y0, x1 - x0
        vt_roi[:, 0] -= bx0
        vt_roi[:, 1] -= by0

        # Per-triangle affine maps from target (ROI) pixels to source pixels and to the shape-transfer shift.
        keep_lips = self.options.keep_mouth and self.mesh.mouth_closed(lt, frame, opt.closed_mouth) and not mesh.mouth_closed
        shift_v = self._vertex_shift(vt_roi, vs, size, keep_lips) if opt.shape_transfer > 0 else None
        coef_src, coef_shift = _affine_tables(tris, vt_roi, mesh.corners, shift_v, drawable)
        keep, not_skin, damping = self._feature_masks(vt_roi, frame, (rh, rw), keep_lips)

        # Where each output pixel looks on the target mesh: itself, or (shape transfer) the point the smooth
        # shift field moves onto it. The shift fades out with the outer mask, so nothing moves where the
        # alpha is 0, and is pinned (exactly 0) on a kept mouth or kept eyes.
        target_roi = original = crop[y0:y1, x0:x1]
        gx = np.broadcast_to(np.arange(rw, dtype=np.float32)[None, :], (rh, rw))
        gy = np.broadcast_to(np.arange(rh, dtype=np.float32)[:, None], (rh, rw))
        moved = np.zeros((rh, rw), dtype=bool)
        px, py = gx, gy
        if coef_shift is not None:
            tri_moves = np.concatenate([[False], np.abs(coef_shift[1:]).max(axis=1) > 1e-6])
            moved = np.take(tri_moves, ids) & (outer > 0)
            if moved.any():
                shift = cv2.merge([m * outer for m in _per_pixel_affine(coef_shift, ids, gx, gy)])
                # Backward map x -> x - s(x - s(x)): one fixed-point step of inverting x -> x + s(x).
                first = cv2.remap(shift, gx - shift[..., 0], gy - shift[..., 1], cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_CONSTANT, borderValue=0)
                px = np.where(moved, gx - first[..., 0], gx).astype(np.float32)
                py = np.where(moved, gy - first[..., 1], gy).astype(np.float32)
                ids = ids[np.clip(np.rint(py), 0, rh - 1).astype(np.intp), np.clip(np.rint(px), 0, rw - 1).astype(np.intp)]

                # Unmoved pixels sample their own whole-pixel position: the remaps copy them exactly.
                stack = cv2.remap(cv2.merge([keep, trust_px, not_skin, damping]), px, py, cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_REPLICATE)
                keep, trust_px, not_skin, damping = cv2.split(stack)
                target_roi = _remap_keeping_grain(target_roi, px, py)
        painted = ids > 0

        # The source texture: one remap through the per-pixel triangle affine.
        map_x, map_y = _per_pixel_affine(coef_src, ids, px, py)
        interp = cv2.INTER_CUBIC if opt.interpolation == "cubic" else cv2.INTER_LINEAR
        if up > 1:  # a magnified source has no grain at this scale to keep
            warped = cv2.remap(src_img, map_x, map_y, interp, borderMode=cv2.BORDER_REPLICATE)
        else:
            warped = _remap_keeping_grain(src_img, map_x, map_y, interp)

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
        corrected = self._match_detail(corrected, target_roi, weight, not_skin, border, ratio * 2.0**level)
        return SwapLayers(
            box=(x0, y0, x1, y1), base=np.ascontiguousarray(target_roi), warped=warped, corrected=corrected,
            alpha=alpha, changed=alpha_out, color_weight=weight, level=level)

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

    def _texture_trust(self, ids: np.ndarray, area2_t: np.ndarray, area2_s: np.ndarray, scale2: float,
                       size: float) -> np.ndarray:
        """Texture reliability per pixel: where the source shows a triangle much smaller than the target needs
        it (seen obliquely, or folded away: negative area), its texture is smeared; fade such regions out. The
        map is blurred so that a few tiny folded triangles (under the nose, inside the lips) leave no pinholes.
        scale2: the target / source-level area scale of the face as a whole."""
        stretch = np.abs(area2_t) / np.maximum(area2_s, 1e-6) / scale2
        fade = mask_ops.smoothstep(np.log2(np.maximum(stretch, 1e-6) / self.tuning.max_stretch))
        trust = np.concatenate([[1.0], np.where(area2_s > 0, 1.0 - fade, 0.0)]).astype(np.float32)
        trust_px = np.take(trust, ids)
        if float(trust_px.min()) < 1.0:
            trust_px = mask_ops.smoothstep(2.0 * _smooth(trust_px, 0.025 * size) - 0.5)  # lone small folds vanish
        return trust_px

    def _outer_mask(self, ids: np.ndarray, front: np.ndarray, frame: mask_ops.FaceFrame, origin: tuple[int, int],
                    shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Front-facing coverage (pinholes closed), eroded and feathered; and the border zone where the target's fine
        detail is carried in fully (1 from the mask edge to `detail_border` inside it, fading to 0 over as much)."""
        opt, size = self.tuning, frame.size
        frontflag = np.concatenate([[0], front]).astype(np.uint8) * 255
        coverage = mask_ops.close_small_holes(np.take(frontflag, ids), max(1, int(round(0.01 * size))))
        erosion = mask_ops.vertical_erosion(
            shape, origin, frame, opt.mask_erode * size, opt.mask_erode_top * size, opt.mask_erode_bottom * size)
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
        opt, rings, size = self.tuning, self._rings, frame.size
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

    def _rasterise(self, v: np.ndarray, drawable: np.ndarray, front: np.ndarray,
                   shape: tuple[int, int]) -> np.ndarray:
        """Triangle-id image (0 = none, i + 1 = triangle i): back-facing triangles first, then front-facing
        ones from far (large z) to near, so the nearer surface wins where the mesh folds over itself."""
        tris = self._triangles
        zmean = v[tris, 2].mean(axis=1)
        back_idx = np.nonzero(drawable & ~front)[0]
        front_idx = np.nonzero(front)[0]
        front_idx = front_idx[np.argsort(-zmean[front_idx], kind="stable")]
        order = np.concatenate([back_idx, front_idx])
        return triangle_labels(v[tris[order], :2], order + 1, shape)

    def _vertex_shift(self, vt: np.ndarray, vs: np.ndarray, size: float, keep_lips: bool = False) -> np.ndarray:
        """Shape transfer: per-vertex 2-D shift (V, 2) of the target mesh toward the source's proportions.

        The source mesh is aligned to the target's in 3-D (similarity: rotation, scale, translation, so a
        head pose difference is not mistaken for shape), and the target vertices move by
        shape_transfer * weight * (aligned source - target), where the weight is 0 on the face outline and
        grows over a few mesh rings inward (and is 0 on a kept mouth / kept eyes)."""
        n = self.topology.num_vertices
        src = vs[:n].astype(np.float64)
        dst = vt[:n].astype(np.float64)
        aligned = _similarity_align(src, dst)
        weight = self._shape_weight_lips if keep_lips and self.tuning.pin_closed_lips else self._shape_weight
        d = (aligned[:, :2] - dst[:, :2]) * (self.tuning.shape_transfer * weight)[:, None]
        limit = self.tuning.max_shape_shift * size
        norm = np.hypot(d[:, 0], d[:, 1])
        d *= np.minimum(1.0, limit / np.maximum(norm, 1e-9))[:, None]
        centres = [d[self._rings[name]].mean(0) for name in self._holes]
        return np.concatenate([d, np.asarray(centres)], axis=0).astype(np.float32)

def _smooth(img: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of a smooth float map, done at a reduced size when sigma is large (same result to
    within a few thousandths, much cheaper)."""
    h, w = img.shape[:2]
    factor = max(1, int(sigma // 3))
    if factor == 1:
        return cv2.GaussianBlur(img, (0, 0), max(sigma, 0.5))
    small = cv2.resize(img, (max(1, w // factor), max(1, h // factor)), interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(small, (0, 0), sigma / factor)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


def _remap_keeping_grain(image: np.ndarray, map_x: np.ndarray, map_y: np.ndarray,
                         interpolation: int = cv2.INTER_LINEAR) -> np.ndarray:
    """uint8 `image` resampled at (map_x, map_y): its smooth part (a sigma-1 blur) interpolated, its finest band
    (the rest: pores, fine lines) taken from the nearest pixel. Any interpolation cancels that band at half-pixel
    offsets, so texture moved by a fraction of a pixel would come out smoother than where it stays."""
    img = image.astype(np.float32)
    low = cv2.GaussianBlur(img, (0, 0), 1.0)
    out = cv2.remap(low, map_x, map_y, interpolation, borderMode=cv2.BORDER_REPLICATE)
    out += cv2.remap(img - low, map_x, map_y, cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _median(values: np.ndarray) -> float:
    """np.median of a flat float32 array, to the bit, from one partition (np.median's checks cost more than that
    on a few thousand values)."""
    half = values.size // 2
    if values.size % 2:
        return float(np.partition(values, half)[half])
    part = np.partition(values, [half - 1, half])
    return float((part[half - 1] + part[half]) / values.dtype.type(2))


def _per_pixel_affine(table: np.ndarray, ids: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pixel's triangle's affine map (`table` rows as in `_affine_tables`, picked by the id image) applied to
    (x, y): the mapped x and y images, float32. One gather per coefficient (a gather of whole rows is slower)."""
    ax, bx, cx, ay, by, cy = (np.take(np.ascontiguousarray(table[:, k]), ids) for k in range(6))
    return ax * x + bx * y + cx, ay * x + by * y + cy


def _ring_distance(triangles: np.ndarray, num_vertices: int, ring: np.ndarray) -> np.ndarray:
    """Mesh-edge hops from each vertex to the nearest vertex of `ring` (float; unreachable = large)."""
    nbrs: list[set[int]] = [set() for _ in range(num_vertices)]
    for a, b, c in triangles.tolist():
        nbrs[a].update((b, c))
        nbrs[b].update((a, c))
        nbrs[c].update((a, b))
    dist = np.full(num_vertices, 1e9)
    frontier = [int(v) for v in ring]
    dist[frontier] = 0
    hop = 0
    while frontier:
        hop += 1
        nxt = []
        for v in frontier:
            for u in nbrs[v]:
                if dist[u] > hop:
                    dist[u] = hop
                    nxt.append(u)
        frontier = nxt
    return dist


def _similarity_align(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """src (N, 3) moved by the least-squares similarity (Umeyama: rotation, uniform scale, translation)
    that best maps it onto dst (N, 3)."""
    ms, md = src.mean(0), dst.mean(0)
    a, b = src - ms, dst - md
    u, sig, vt = np.linalg.svd(b.T @ a / len(src))
    e = np.eye(3)
    e[2, 2] = np.sign(np.linalg.det(u @ vt)) or 1.0
    rot = u @ e @ vt
    var = (a * a).sum() / len(src)
    scale = float((sig * np.diag(e)).sum() / max(var, 1e-12))
    return scale * a @ rot.T + md


def _affine_tables(tris: np.ndarray, vt: np.ndarray, source_corners: np.ndarray, shift: np.ndarray | None,
                   drawable: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-triangle affine coefficients (row 0 = "no triangle"), each (T + 1, 6) float32 as
    (ax, bx, cx, ay, by, cy): a target pixel (x, y) maps to (ax x + bx y + cx, ay x + by y + cy).
    The first table maps target pixels to source pixels (source_corners: (T, 3, 2) float64, each triangle's corners
    in the source), the second (if `shift` is given) to the shape-transfer shift, interpolated linearly inside
    each triangle."""
    ok = np.nonzero(drawable)[0]
    corners = vt[tris[ok], :2].astype(np.float64)  # (k, 3, 2)
    d1, d2 = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    det = (d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0])[:, None]
    value = source_corners[ok]  # (k, 3, m): the mapped values at the three corners, both tables' side by side
    if shift is not None:
        value = np.concatenate([value, shift[tris[ok]].astype(np.float64)], axis=2)
    e1, e2 = value[:, 1] - value[:, 0], value[:, 2] - value[:, 0]
    gx = (e1 * d2[:, 1:2] - e2 * d1[:, 1:2]) / det  # d value / dx, for each mapped value
    gy = (e2 * d1[:, 0:1] - e1 * d2[:, 0:1]) / det
    c = value[:, 0] - gx * corners[:, 0, 0:1] - gy * corners[:, 0, 1:2]
    rows = np.stack([gx, gy, c], axis=2).reshape(len(ok), -1)  # (k, 3 m): (ax, bx, cx) of each value in turn
    both = np.zeros((len(tris) + 1, rows.shape[1]), dtype=np.float32)
    both[0, :6] = (0, 0, -1e4, 0, 0, -1e4)
    both[ok + 1] = rows
    return both[:, :6], (both[:, 6:] if shift is not None else None)

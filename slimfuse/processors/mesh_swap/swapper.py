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
from dataclasses import dataclass, field
from typing import Literal

import cv2
import numpy as np

from slimfuse.config import SwapOptions
from slimfuse.models.mesh_topology import NUM_LANDMARKS, MeshTopology
from slimfuse.processors import blend as blend_ops
from slimfuse.processors import color as color_ops
from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.raster import triangle_labels

_SHIFT = 4
_BOX_MARGIN = 4  # pixels kept around the outer mask's box (the shape transfer samples a little beyond it)


@dataclass(frozen=True)
class MeshTuning:
    """Tuning of the mesh swapper (what a user chooses is the run's SwapOptions). Fractions are of the target face
    size (the larger of the face oval's height and width) unless noted."""

    glasses_reach: float = 0.06  # how far the target's eye region (eye_region "target") reaches past the eyelid rings
    occluder_darkness: float = 0.5  # a line this much darker than its surroundings (share of their brightness)
    occluder_length: float = 0.25  # ... if it runs on for at least this (of the face size)
    rims_reach: float = 0.15  # rims are looked for this far past the eyelid rings
    occluder_width: float = 0.04  # the widest line that counts (half-width, of the face size)
    poisson_max_shift: float = 8.0  # Poisson blending moves the colour-corrected face by at most this (levels)
    mask_erode: float = 0.03  # the mask edge starts this far inside the face outline
    mask_erode_top: float = 0.06  # extra erosion growing toward the top of the forehead (hairline)
    mask_erode_bottom: float = 0.05  # extra erosion growing toward the chin (unstable jaw points)
    mask_feather: float = 0.08  # width of the alpha ramp at the face edge
    hole_feather: float = 0.02  # width of the alpha ramp at a kept mouth / kept eyes
    closed_mouth: float = 0.015  # a mouth whose inner-lip opening is below this (of the face size) is closed
    pin_closed_lips: bool = True  # ... and their shape (no shape transfer on them)
    lips_keep_grow: float = 0.02  # a closed target mouth under an open source one keeps its seam, this far out
    eye_keep_grow: float = 0.025  # kept eyes (keep_eyes) reach this far past the eyelid ring
    magnify_sharpen: float = 0.8  # unsharp amount on a magnified source: the edge contrast magnification spreads
    detail_transfer: float = 0.15  # at most this share of the target's finest detail is carried into a source
    # that has less of it (a smaller, magnified source)
    detail_border: float = 0.14  # ... and all of it (up to the target's energy) from the mask edge to this far in,
    # fading to `detail_transfer` over as far again: the skin's grain runs on across the mask border
    detail_floor: float = 0.5  # a source with more fine detail than the target keeps at least this share of it
    detail_texture: float = 4.0  # the carried band's local energy is held to this many times its median on the
    # skin: pores and fine wrinkles pass, the target's own edges (glasses rims, nose outline, deep folds) stay faint
    color_strength: float = 1.0  # 0 = keep the source's colour, 1 = take the target's low frequencies
    color_sigma: float = 0.6  # colour blur sigma, as a fraction of the target's inter-eye distance
    feature_color_damping: float = 0.5  # share of the colour gain withheld on lips and eyes
    max_stretch: float = 2.5  # texture magnified (in area) this much more than the face as a whole starts to
    # fade out, and is gone at twice that (seen obliquely in the source, or mouth closed there and open here)
    shape_transfer: float = 0.7  # 0 = keep the target's feature layout, 1 = move it fully to the source's
    shape_rings: int = 4  # the shape shift grows from 0 on the face outline to full over this many mesh rings
    max_shape_shift: float = 0.08  # no vertex moves more than this
    max_source_face: int = 768  # prepare_source scales larger source faces down to this many pixels
    interpolation: Literal["linear", "cubic"] = "cubic"  # the warp's kernel (the texture is magnified before it)

    def __post_init__(self) -> None:
        if self.interpolation not in ("linear", "cubic"):
            raise ValueError(f"interpolation must be 'linear' or 'cubic', not {self.interpolation!r}")
        for name in ("mask_erode", "mask_erode_top", "mask_erode_bottom", "color_sigma", "detail_border"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        for name in ("mask_feather", "hole_feather"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if not 0.0 <= self.color_strength <= 1.0 or not 0.0 <= self.feature_color_damping <= 1.0:
            raise ValueError("color_strength and feature_color_damping must lie in [0, 1]")
        if not 0.0 <= self.shape_transfer <= 1.0:
            raise ValueError("shape_transfer must lie in [0, 1]")
        if self.shape_rings < 1 or self.max_shape_shift < 0:
            raise ValueError("shape_rings must be >= 1 and max_shape_shift >= 0")
        if self.max_stretch < 1.0:
            raise ValueError("max_stretch must be at least 1")
        if self.detail_texture <= 0:
            raise ValueError("detail_texture must be > 0")
        if not 0.0 <= self.detail_floor <= 1.0 or not 0.0 <= self.detail_transfer <= 1.0:
            raise ValueError("detail_floor and detail_transfer must lie in [0, 1]")
        if self.magnify_sharpen < 0:
            raise ValueError("magnify_sharpen must be >= 0")
        if self.occluder_width <= 0 or self.rims_reach < 0:
            raise ValueError("occluder_width must be > 0 and rims_reach >= 0")
        if self.max_source_face < 32:
            raise ValueError("max_source_face must be at least 32 pixels")


@dataclass(frozen=True, eq=False)
class SourceFace:
    """One source identity, prepared once and reused for every target face and frame.

    image: RGB uint8 crop holding the source face; landmarks: (468, 3) float32 in that crop's pixels.
    levels: the image and its pyrDown halvings (level k has landmarks * 0.5**k), filled in automatically.
    face_size: the landmarks' bounding-box side in pixels, filled in automatically."""

    image: np.ndarray
    landmarks: np.ndarray
    levels: tuple[np.ndarray, ...] = field(default=(), repr=False)
    face_size: float = 0.0

    def __post_init__(self) -> None:
        img = np.asarray(self.image)
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise ValueError("SourceFace.image must be an RGB uint8 HxWx3 array")
        lm = np.asarray(self.landmarks, dtype=np.float32)
        if lm.ndim != 2 or lm.shape[0] < NUM_LANDMARKS or lm.shape[1] != 3:
            raise ValueError(f"SourceFace.landmarks must be ({NUM_LANDMARKS}, 3)")
        lm = np.ascontiguousarray(lm[:NUM_LANDMARKS])
        img = np.ascontiguousarray(img)
        img.setflags(write=False)
        lm.setflags(write=False)
        object.__setattr__(self, "image", img)
        object.__setattr__(self, "landmarks", lm)
        span = lm[:, :2].max(0) - lm[:, :2].min(0)
        size = float(max(span.max(), 1.0))
        object.__setattr__(self, "face_size", size)
        if not self.levels:
            levels = [img]
            while size / 2 ** len(levels) >= 48 and min(levels[-1].shape[:2]) >= 16:
                levels.append(cv2.pyrDown(levels[-1]))
            for lv in levels:
                lv.setflags(write=False)
            object.__setattr__(self, "levels", tuple(levels))
        object.__setattr__(self, "_upsampled", {})
        object.__setattr__(self, "_meshes", {})

    @staticmethod
    def magnified(ratio: float) -> int:
        """The upsampling factor (1, 2 or 4) for a target face `ratio` times the source face's size."""
        return 1 if ratio < 1.3 else 2 if ratio < 2.6 else 4

    def upsampled(self, factor: int, sharpen: float = 0.0) -> np.ndarray:
        """The source image magnified `factor` times with Lanczos, then unsharp-masked by `sharpen` at the source's
        own pixel scale (made once, then cached); pixel centres map as x' = (x + 0.5) * factor - 0.5."""
        cache: dict[tuple[int, float], np.ndarray] = self._upsampled  # type: ignore[attr-defined]
        if (factor, sharpen) not in cache:
            img = self.image
            big = cv2.resize(img, (img.shape[1] * factor, img.shape[0] * factor), interpolation=cv2.INTER_LANCZOS4)
            if sharpen > 0:
                f = big.astype(np.float32)
                f += np.float32(sharpen) * (f - cv2.GaussianBlur(f, (0, 0), 0.5 * factor))
                big = np.clip(np.rint(f), 0, 255).astype(np.uint8)
            big.setflags(write=False)
            cache[(factor, sharpen)] = big
        return cache[(factor, sharpen)]


@dataclass(frozen=True)
class SourceMesh:
    """The source mesh at one scale: what every target face swapped from it reuses.

    triangles: the swapper's triangles it was made for; vertices: (V + 3, 3) float32, the hole centres appended;
    corners: (T, 3, 2) float64, each triangle's corners; areas: (T,) twice each triangle's signed area;
    mouth_closed: whether the source's mouth is closed."""

    triangles: np.ndarray
    vertices: np.ndarray
    corners: np.ndarray
    areas: np.ndarray
    mouth_closed: bool


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
        n = topology.num_vertices
        self._rings = {
            "oval": np.asarray(topology.face_oval, dtype=np.int64),
            "lips_outer": np.asarray(topology.lips_outer, dtype=np.int64),
            "lips_inner": np.asarray(topology.lips_inner, dtype=np.int64),
            "left_eye": np.asarray(topology.left_eye, dtype=np.int64),
            "right_eye": np.asarray(topology.right_eye, dtype=np.int64),
        }
        # Hole fans: a virtual vertex at each hole ring's centroid (indices n, n+1, n+2). The rings run in
        # the triangles' sense, so (centre, r_i, r_i+1) has it too.
        self._holes = ("left_eye", "right_eye", "lips_inner")
        fans: list[tuple[int, int, int]] = []
        for h, name in enumerate(self._holes):
            ring = self._rings[name]
            c = n + h
            fans.extend((c, int(ring[i]), int(ring[(i + 1) % len(ring)])) for i in range(len(ring)))
        self._triangles = np.concatenate([np.asarray(topology.triangles, np.int64), np.asarray(fans, np.int64)])
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
        img = np.asarray(image)
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise ValueError("source image must be an RGB uint8 HxWx3 array")
        lm = _check_landmarks(landmarks)
        lo, hi = lm[:, :2].min(0), lm[:, :2].max(0)
        size = float(max((hi - lo).max(), 1.0))
        margin = 0.25 * size + 4
        h, w = img.shape[:2]
        x0, y0 = max(int(math.floor(lo[0] - margin)), 0), max(int(math.floor(lo[1] - margin)), 0)
        x1, y1 = min(int(math.ceil(hi[0] + margin)) + 1, w), min(int(math.ceil(hi[1] + margin)) + 1, h)
        if x1 - x0 < 2 or y1 - y0 < 2:
            raise ValueError("source landmarks lie outside the source image")
        crop = img[y0:y1, x0:x1]
        local = lm.copy()
        local[:, 0] -= x0
        local[:, 1] -= y0
        scale = min(1.0, self.tuning.max_source_face / size)
        if scale < 1.0:
            nw, nh = max(1, int(round(crop.shape[1] * scale))), max(1, int(round(crop.shape[0] * scale)))
            sx, sy = nw / crop.shape[1], nh / crop.shape[0]
            crop = cv2.resize(crop, (nw, nh), interpolation=cv2.INTER_AREA)
            # INTER_AREA keeps pixel-centre alignment: x' = (x + 0.5) * s - 0.5
            local[:, 0] = (local[:, 0] + 0.5) * sx - 0.5
            local[:, 1] = (local[:, 1] + 0.5) * sy - 0.5
            local[:, 2] *= (sx + sy) / 2
        crop = np.array(crop)
        if self.options.remove_source_glasses:
            crop = self._without_glasses(crop, local)
        return SourceFace(image=crop, landmarks=local)

    def _without_glasses(self, image: np.ndarray, lm: np.ndarray) -> np.ndarray:
        """The source with thin dark lines in its glasses zone (rims, bridge, temple arms) inpainted from the skin
        around them; the eyes with their lashes are left alone."""
        size = float(max((lm[:, :2].max(0) - lm[:, :2].min(0)).max(), 1.0))
        shape = image.shape[:2]
        zone = self._glasses_zone(lm, size, shape, self.tuning.rims_reach) > 0.5
        features = [lm[self._rings[k], :2] for k in ("left_eye", "right_eye")]
        sd = mask_ops.polygons_signed_distance(shape, features, 0.05 * size)
        spared = mask_ops.soft_from_distance(shape, sd, 0.025 * size, 1.0) > 0
        darkness = self._darkness(image, size)
        lines = self._rims(darkness, size, zone) & ~spared
        if not lines.any():
            return image
        # Hysteresis: fainter parts of the same lines (their soft edges, where they cross a brow) go too.
        weak = ((darkness > 0.5 * self.tuning.occluder_darkness) & zone & ~spared).astype(np.uint8)
        count, labels = cv2.connectedComponents(weak, connectivity=8)
        touched = np.zeros(count, bool)
        touched[np.unique(labels[lines])] = True
        touched[0] = False
        lines = touched[labels]
        grow = max(1, int(round(0.008 * size)))
        hole = cv2.dilate(lines.astype(np.uint8), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1,) * 2))
        # Filled from the skin around it only (not from brows, lashes or the rims' own soft edges), so no dark
        # smear is dragged in.
        skin = (hole == 0) & (darkness < 0.5 * self.tuning.occluder_darkness)
        fill = color_ops.normalized_blur(image.astype(np.float32), skin.astype(np.float32), max(1.0, 0.02 * size))
        return np.where(hole[..., None] > 0, np.clip(np.rint(fill), 0, 255), image).astype(np.uint8)

    def _darkness(self, image: np.ndarray, size: float) -> np.ndarray:
        """How much darker than its surroundings each pixel is, across lines up to `occluder_width` wide, as a
        share of the surroundings' brightness (a rim is nearly black on skin; a crease only a little darker)."""
        luma = color_ops.luma(image)
        dark = mask_ops.dark_lines(luma, self.tuning.occluder_width * size)
        return dark / (luma + dark + 1.0)

    def _rims(self, darkness: np.ndarray, size: float, zone: np.ndarray) -> np.ndarray:
        """Rim-like lines in `zone` (bool): `darkness` above `occluder_darkness` in a component spanning at least
        `occluder_length` of the face, so creases, wrinkles and lashes do not count."""
        opt = self.tuning
        lines = (darkness > opt.occluder_darkness) & zone
        count, labels, stats, _ = cv2.connectedComponentsWithStats(lines.astype(np.uint8), connectivity=8)
        long = np.zeros(count, bool)
        long[1:] = np.maximum(stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT]) >= opt.occluder_length * size
        return long[labels]

    def _occluders(self, target: np.ndarray, warped: np.ndarray, v: np.ndarray, size: float) -> np.ndarray:
        """Where the target shows something in front of its face (glasses rims): rim-like lines in its glasses
        zone, much darker than anything the warped source has close by. Soft-edged, float32."""
        shape = target.shape[:2]
        zone = self._glasses_zone(v, size, shape, self.tuning.rims_reach) > 0.5
        near = max(1, int(round(0.01 * size)))
        in_source = cv2.dilate(self._darkness(warped, size),
                               cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * near + 1,) * 2))
        lines = self._rims(self._darkness(target, size) - 0.5 * in_source, size, zone)
        if not lines.any():
            return np.zeros(shape, np.float32)
        occl = lines.astype(np.uint8) * 255
        grow = max(1, int(round(0.005 * size)))  # the rims' soft edges too, and little of the skin beside them
        occl = cv2.dilate(occl, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1,) * 2))
        return mask_ops.eroded_feather(occl, 0.0, max(1.0, 0.005 * size))

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
        lt = _check_landmarks(landmarks)
        rings = self._rings
        frame = mask_ops.face_frame(lt, rings["oval"], rings["left_eye"], rings["right_eye"], rings["lips_inner"])
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
        span = lt[:, :2].max(0) - lt[:, :2].min(0)
        ratio = float(max(span.max(), 1.0)) / max(source.face_size, 1.0)
        level = 0 if ratio >= 1.0 else int(min(math.floor(math.log2(1.0 / ratio)), len(source.levels) - 1))
        up = source.magnified(ratio) if level == 0 else 1
        src_img = source.upsampled(up, opt.magnify_sharpen) if up > 1 else source.levels[level]
        mesh = self._source_mesh(source, level, up)

        vt = self._with_hole_centres(lt)
        vs = mesh.vertices
        vt_roi = vt.copy()
        vt_roi[:, 0] -= x0
        vt_roi[:, 1] -= y0

        tris = self._triangles
        ta, tb, tc = vt_roi[tris[:, 0]], vt_roi[tris[:, 1]], vt_roi[tris[:, 2]]
        area2_t = _cross2(tb - ta, tc - ta)
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
        keep_lips = self.options.keep_mouth and self._closed(lt, frame) and not mesh.mouth_closed
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
            occl = self._occluders(original, warped, vt_roi, size) * (outer > 0)
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
            hole_f = max(1.0, min(opt.hole_feather * size, 0.5 * _opening(poly, frame.down)))
            keep = mask_ops.soft_polygons(shape, [poly], 0.25 * hole_f, hole_f)
        if self.options.eye_region == "target":
            keep = np.maximum(keep, self._glasses_zone(vt_roi, size, shape))
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

    def _glasses_zone(self, v: np.ndarray, size: float, shape: tuple[int, int], reach: float | None = None) -> np.ndarray:
        """Where glasses sit (eye_region="target"): around both eyes, over the bridge of the nose and along the
        temples to the face's sides, soft-edged; the target's pixels stay there, its glasses in front."""
        zone = np.zeros(shape, np.uint8)
        one = 1 << _SHIFT
        for name in ("left_eye", "right_eye"):
            ring = np.round(v[self._rings[name], :2] * one).astype(np.int32)
            cv2.fillPoly(zone, [ring], 255, cv2.LINE_8, _SHIFT)
        thick = max(2, int(round(0.07 * size)))
        for a, b in ((133, 362), (33, 234), (263, 454), (33, 133), (263, 362)):
            pa, pb = np.round(v[a, :2]).astype(int), np.round(v[b, :2]).astype(int)
            cv2.line(zone, (int(pa[0]), int(pa[1])), (int(pb[0]), int(pb[1])), 255, thick)
        grow = max(1, int(round((self.tuning.glasses_reach if reach is None else reach) * size)))
        zone = cv2.dilate(zone, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1, 2 * grow + 1)))
        return mask_ops.eroded_feather(zone, 0.0, max(1.0, self.tuning.hole_feather * size * 1.5))

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

    def _source_mesh(self, source: SourceFace, level: int, up: int) -> SourceMesh:
        """The source's mesh at pyramid `level` or magnified `up` times (made once per scale, then cached)."""
        cache: dict[tuple[float, int, int], SourceMesh] = source._meshes  # type: ignore[attr-defined]
        key = (self.tuning.closed_mouth, level, up)
        known = cache.get(key)
        if known is None or known.triangles is not self._triangles:  # made by another swapper
            if up > 1:
                ls = (source.landmarks + np.float32(0.5)) * np.float32(up) - np.float32(0.5)
                ls[:, 2] = source.landmarks[:, 2] * np.float32(up)
            else:
                ls = source.landmarks * np.float32(0.5**level)
            vs = self._with_hole_centres(ls)
            corners = vs[self._triangles, :2].astype(np.float64)
            areas = _cross2(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
            for shared in (vs, corners, areas):  # read by every render thread
                shared.setflags(write=False)
            rings = self._rings
            frame = mask_ops.face_frame(ls, rings["oval"], rings["left_eye"], rings["right_eye"], rings["lips_inner"])
            cache[key] = SourceMesh(triangles=self._triangles, vertices=vs, corners=corners, areas=areas,
                                    mouth_closed=self._closed(ls, frame))
        return cache[key]

    def _closed(self, lm: np.ndarray, frame: mask_ops.FaceFrame) -> bool:
        """Whether the mouth of this mesh is closed (its inner-lip opening under `closed_mouth` of the face)."""
        return _opening(lm[self._rings["lips_inner"], :2], frame.down) < self.tuning.closed_mouth * frame.size

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

    def _with_hole_centres(self, lm: np.ndarray) -> np.ndarray:
        centres = [lm[self._rings[name]].mean(0) for name in self._holes]
        return np.concatenate([lm, np.asarray(centres, dtype=np.float32)], axis=0).astype(np.float32)


def _check_landmarks(landmarks: np.ndarray) -> np.ndarray:
    lm = np.asarray(landmarks, dtype=np.float32)
    if lm.ndim != 2 or lm.shape[0] < NUM_LANDMARKS or lm.shape[1] != 3:
        raise ValueError(f"landmarks must be ({NUM_LANDMARKS}, 3) x, y, z in pixels")
    lm = lm[:NUM_LANDMARKS]
    if not np.isfinite(lm).all():
        raise ValueError("landmarks contain NaN or infinity")
    return lm


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


def _opening(poly: np.ndarray, down: np.ndarray) -> float:
    """Mean height of a ring polygon across its long axis: area / extent along `down`'s normal."""
    p = np.asarray(poly, dtype=np.float64)[:, :2]
    area = 0.5 * abs(float(np.sum(p[:, 0] * np.roll(p[:, 1], -1) - np.roll(p[:, 0], -1) * p[:, 1])))
    across = p @ np.array([-float(down[1]), float(down[0])])
    return area / max(float(across.max() - across.min()), 1.0)


def _cross2(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]


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

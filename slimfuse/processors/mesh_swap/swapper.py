"""MeshSwapper: the stages of the mesh swap in order, one target face at a time (see the package's docstring)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from slimfuse.config import SwapOptions
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.processors import mesh_masks as mask_ops
from slimfuse.processors.mesh_masks import FaceFrame
from slimfuse.processors.mesh_swap.color_match import feature_masks, matched_color, matched_lips, skin_weight
from slimfuse.processors.mesh_swap.composition import (
    SMALLEST_ALPHA, blended, changed_alpha, face_alpha, kept_regions, outer_mask, source_eyes, with_target_in_front)
from slimfuse.processors.mesh_swap.detail import matched_detail
from slimfuse.processors.mesh_swap.eyes import EYE_CONTOURS, EyeLandmarker
from slimfuse.processors.mesh_swap.focus import matched_focus
from slimfuse.processors.mesh_swap.geometry import (
    Region, affine_tables, face_region, per_pixel_affine, remap_keeping_grain, remapped_maps, warp_source)
from slimfuse.processors.mesh_swap.glasses import occluders
from slimfuse.processors.mesh_swap.mesh import SwapMesh, checked_landmarks
from slimfuse.processors.mesh_swap.seam import around, seam_matched
from slimfuse.processors.mesh_swap.shape_transfer import ShapeTransfer, sample_points
from slimfuse.processors.mesh_swap.source import ScaledSource, SourceFace, cut_out_source, scaled_source
from slimfuse.processors.mesh_swap.source_skin import usable_source
from slimfuse.processors.mesh_swap.tuning import MeshTuning
from slimfuse.processors.mesh_swap.visibility import facing_coverage, texture_trust, visible_mesh

BOX_MARGIN = 4  # pixels kept around the outer mask's box (the shape transfer samples a little beyond it)


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
    (of the source's texture), `outer` (the mask at the face's edge), `border` (its detail zone), `seam` (where
    the face takes the target's light) and `grain` (where its grain is held to the target's)."""

    region: Region
    drawable: np.ndarray
    triangle_ids: np.ndarray
    trust: np.ndarray
    outer: np.ndarray
    border: np.ndarray
    seam: np.ndarray
    grain: np.ndarray


@dataclass(frozen=True, eq=False)
class Rendered:
    """The footprint's region after the geometry: `original` (the crop's pixels), `target` (moved by the shape
    transfer), `warped` (the source rendered on the target mesh), `painted` (a triangle is seen) and `moved` (the
    shape transfer moved the pixel); and the maps moved along: `kept` (target regions that stay), `trust`,
    `not_skin`, `damping` and `lips` (see color_match.feature_masks); `eye_seam`, where the face takes the target's
    light around kept shut eyes (None where none is shut); `hair_seam`, the same around the source's hair or hat
    that is not used (None where it has none)."""

    original: np.ndarray
    target: np.ndarray
    warped: np.ndarray
    painted: np.ndarray
    moved: np.ndarray
    kept: np.ndarray
    trust: np.ndarray
    not_skin: np.ndarray
    damping: np.ndarray
    lips: np.ndarray
    eye_seam: np.ndarray | None
    hair_seam: np.ndarray | None


class MeshSwapper:
    """Swap faces with a fixed mesh topology: the user's `options`, the code's `tuning`; `eyes` (the iris model)
    puts both faces' lid rings on the lid lines it sees, and the target eyes more closed than the source's keep
    their opening and lid line (without it, FaceMesh's rings are used and every eye is the source's)."""

    def __init__(self, topology: MeshTopology, options: SwapOptions = SwapOptions(),
                 tuning: MeshTuning = MeshTuning(), eyes: EyeLandmarker | None = None) -> None:
        self.topology = topology
        self.options = options
        self.tuning = tuning
        self.eyes = eyes
        self.mesh = SwapMesh.of(topology)
        self.shape_transfer = ShapeTransfer.of(self.mesh, options, tuning)

    def prepare_source(self, image: np.ndarray, landmarks: np.ndarray) -> SourceFace:
        """Cut the source face (with a margin) out of `image`, scaled down if it is larger than
        `tuning.max_source_face`, with the map of its pixels that may be used (not its hair or hat, nor its
        glasses frames if the options say so) and its pyramid.
        image: RGB uint8; landmarks: (468, 3) pixels."""
        crop, local = cut_out_source(image, landmarks, self.tuning.max_source_face)
        openings = None
        if self.eyes is not None:
            local, openings, _ = self.eyes.lid_lines(crop, local)
        usable, hair_shadow = usable_source(crop, local, self.mesh, self.tuning, self.options.remove_source_glasses)
        return SourceFace(image=crop, landmarks=local, eye_openings=openings, usable=usable, hair_shadow=hair_shadow)

    def swap_crop(self, crop: np.ndarray, landmarks: np.ndarray, source: SourceFace) -> tuple[np.ndarray, np.ndarray]:
        """Swap the face in `crop` (RGB uint8) whose FaceMesh `landmarks` (468, 3) are in crop pixels.

        Returns (swapped RGB uint8 of crop's shape, alpha float32 HxW in [0, 1] marking where the result
        differs from `crop`); where alpha is 0 the swapped crop equals `crop` exactly."""
        layers = self.layers(crop, landmarks, source)
        swapped = crop.copy()
        changed = np.zeros(crop.shape[:2], dtype=np.float32)
        if layers is None:
            return swapped, changed
        left, top, right, bottom = layers.box
        face = blended(layers.base, layers.corrected, layers.alpha, self.options, self.tuning)
        # The contract, whatever the blend did: the crop's own pixels wherever nothing changed.
        np.copyto(face, crop[top:bottom, left:right], where=(layers.changed == 0)[..., None])
        swapped[top:bottom, left:right] = face
        changed[top:bottom, left:right] = layers.changed
        return swapped, changed

    def layers(self, crop: np.ndarray, landmarks: np.ndarray, source: SourceFace) -> SwapLayers | None:
        """The intermediate images of `swap_crop` (before blending), or None if no face pixel is covered."""
        if crop.ndim != 3 or crop.shape[2] != 3 or crop.dtype != np.uint8:
            raise ValueError("crop must be an RGB uint8 HxWx3 array")
        target_landmarks, held_eyes, shut = self._lid_lines(crop, checked_landmarks(landmarks), source)
        tuning = self.tuning
        region = face_region(target_landmarks, self.mesh.with_hole_centres(target_landmarks), crop.shape[:2])
        if region is None:
            return None
        frame = self.mesh.face_frame(target_landmarks)
        scaled = scaled_source(source, target_landmarks, self.mesh, tuning.magnify_sharpen, tuning.closed_mouth)
        footprint = self._footprint(region, frame, scaled)
        if footprint is None:
            return None
        keep_lips = (self.options.keep_mouth and self.mesh.mouth_closed(target_landmarks, frame, tuning.closed_mouth)
                     and not scaled.mesh.mouth_closed)
        return self._compose(self._render(crop, footprint, frame, scaled, keep_lips, held_eyes, shut), footprint,
                             frame, scaled)

    def _lid_lines(self, crop: np.ndarray, landmarks: np.ndarray,
                   source: SourceFace) -> tuple[np.ndarray, tuple[str, ...], float]:
        """The target's `landmarks` with its lid rings on the lid lines the iris model sees; the eyes less open than
        `held_eye_opening` of the source's, which keep their opening; and how shut the eyes are (0-1), which keep
        their own lid lines so far: both, when either reads under `shut_eye_opening` or as lowered over an eye
        looking down (`lowered_eyes`). Without the model (or a source measured by it): the landmarks as they are,
        no such eyes, 0."""
        if self.eyes is None or source.eye_openings is None:
            return landmarks, (), 0.0
        landmarks, openings, iris_depths = self.eyes.lid_lines(crop, landmarks)
        tuning = self.tuning
        # Eyes close together: an eye read open beside a shut one is mostly one under hair or in shadow, where the
        # model sees an eye that is not there. Both keep their own lids (a wink keeps its open eye too).
        shut = 1.0 if min(openings) < tuning.shut_eye_opening else lowered_eyes(openings, iris_depths, tuning)
        if shut >= SMALLEST_ALPHA:  # (less would change no pixel)
            return landmarks, tuple(EYE_CONTOURS), shut
        held = tuple(eye for eye, opening, source_opening in zip(EYE_CONTOURS, openings, source.eye_openings,
                                                                 strict=True)
                     if opening < tuning.held_eye_opening * source_opening)
        return landmarks, held, 0.0

    def _footprint(self, region: Region, frame: FaceFrame, scaled: ScaledSource) -> Footprint | None:
        """Visibility and the outer mask: the triangles seen in `region`, the source texture's trust and the mask,
        cut to the mask's box (None if nothing of the face is seen, or the face is seen in profile; the mask fades
        out as the face turns toward that)."""
        tuning = self.tuning
        visible = visible_mesh(self.mesh.triangles, region.vertices, region.shape)
        # A face turning into profile fades out before it is left alone: a head turning in a video does not pop.
        presence = 1.0 - float(mask_ops.smoothstep(np.float32(
            (visible.facing_away - tuning.max_facing_away + tuning.profile_fade) / tuning.profile_fade)))
        if not visible.triangle_ids.any() or presence <= 0.0:
            return None
        trust = texture_trust(visible, scaled.mesh.areas, scaled.area_ratio, frame.size, tuning.max_stretch)
        outer, border, seam, grain = outer_mask(facing_coverage(visible, frame.size), frame, region.origin, tuning)
        outer *= np.float32(presence)
        # Nothing changes where the outer mask is 0 (the shift fades out with it too), so the rest works on its
        # bounding box, a few pixels wider for the shape transfer's reach there: about a third fewer pixels.
        face = region.around(outer > 0, BOX_MARGIN)
        if face is None:
            return None
        window = face.within(region)
        return Footprint(region=face, drawable=visible.drawable, triangle_ids=visible.triangle_ids[window],
                         trust=trust[window], outer=outer[window], border=border[window], seam=seam[window],
                         grain=grain[window])

    def _render(self, crop: np.ndarray, footprint: Footprint, frame: FaceFrame, scaled: ScaledSource,
                keep_lips: bool, held_eyes: tuple[str, ...], shut: float) -> Rendered:
        """Geometry: the target mesh moved by the shape transfer (`keep_lips`: not on its lips; `held_eyes`: their
        lids with their corners only), the source warped onto it (as far as the eyes are `shut`, not on their lid
        lines, nor where the source's eyes land on them), and the target's pixels and the footprint's maps moved
        along; the texture is not trusted where the source is not usable (its hair, hat or frames), so the target's
        own pixels stay there."""
        region, tuning = footprint.region, self.tuning
        shift = (self.shape_transfer.vertex_shift(region.vertices, scaled.mesh.vertices, frame.size, keep_lips,
                                                  held_eyes) if tuning.shape_transfer > 0 else None)
        to_source, to_shift = affine_tables(self.mesh.triangles, region.vertices, scaled.mesh.corners, shift,
                                            footprint.drawable)
        kept, lids = kept_regions(region.vertices, self.mesh, frame, region.shape, keep_lips, shut, self.options,
                                  tuning)
        not_skin, damping, lips = feature_masks(region.vertices, self.mesh, frame.size, region.shape)
        original = target = region.of(crop)
        triangle_ids, trust = footprint.triangle_ids, footprint.trust
        points = sample_points(to_shift, triangle_ids, footprint.outer)
        if points.any_moved:
            triangle_ids = points.triangle_ids(triangle_ids)
            kept, trust, not_skin, damping, lips = points.resampled(kept, trust, not_skin, damping, lips)
            lids = points.resampled(lids)[0] if lids is not None else None
            target = remap_keeping_grain(target, points.x, points.y)
        map_x, map_y = per_pixel_affine(to_source, triangle_ids, points.x, points.y)
        warped = warp_source(scaled.image, map_x, map_y, scaled.magnification > 1, tuning.interpolation)
        # The source's hair, hat or frames are not trusted at all; the skin in that hair's shadow takes the target's
        # light (the seam's rule).
        usable, hair_seam = _warped_maps(scaled, (scaled.usable, scaled.hair_shadow), map_x, map_y)
        if usable is not None:
            trust = trust * usable
        eye_seam = None
        if lids is not None:
            eyes = np.maximum(lids, source_eyes(scaled.mesh.vertices, self.mesh, tuple(EYE_CONTOURS), map_x, map_y,
                                                tuning))
            kept = np.maximum(kept, np.float32(shut) * eyes)
            eye_seam = np.float32(shut) * around(eyes, tuning.shut_eye_seam * frame.size)
        return Rendered(original=original, target=target, warped=warped, painted=triangle_ids > 0, moved=points.moved,
                        kept=kept, trust=trust, not_skin=not_skin, damping=damping, lips=lips, eye_seam=eye_seam,
                        hair_seam=hair_seam)

    def _compose(self, rendered: Rendered, footprint: Footprint, frame: FaceFrame,
                 scaled: ScaledSource) -> SwapLayers | None:
        """Composition, colour and detail: the rendered face's alpha over the target (None where it changes
        nothing), its colour, focus and finest detail matched to the target's, and its light and grain at the seam."""
        target, in_front = rendered.target, None
        if self.options.keep_occluders:
            # The target's glasses stay in front: unmoved, over the swapped face.
            in_front = occluders(rendered.original, rendered.warped, footprint.region.vertices, self.mesh, frame.size,
                                 self.tuning) * (footprint.outer > 0)
            target = with_target_in_front(target, rendered.original, in_front)
        alpha = face_alpha(footprint.outer, rendered.kept, rendered.trust, in_front, rendered.painted)
        changed = changed_alpha(alpha, footprint.outer, rendered.moved)
        if not changed.any():
            return None
        weight = skin_weight(footprint.outer, rendered.not_skin, rendered.trust, rendered.painted, alpha)
        corrected = matched_color(rendered.warped, target, weight, rendered.damping, frame, self.tuning)
        shown = alpha > 0
        corrected = matched_focus(corrected, target, rendered.not_skin > 0.5, shown, self.tuning.max_focus_blur * frame.size)
        # After the focus step, which reads the source's own lip edges, not the edge of the lips' colour shift.
        corrected = matched_lips(corrected, target, rendered.lips, shown, self.tuning.lip_color,
                                 self.tuning.lip_lightness)
        corrected = matched_detail(corrected, target, weight, rendered.not_skin, footprint.border, scaled.level_ratio,
                                   self.tuning)
        # The features (eyes, lips) are the source's even where the seam reaches them (at the outline, and around the
        # source's hair or hat, whose shadow lies next to them); around kept shut eyes (the target's own) the light
        # is the target's all the same.
        skin = 1.0 - rendered.not_skin
        seam = footprint.seam
        if rendered.hair_seam is not None:
            seam = np.maximum(seam, rendered.hair_seam)
        seam = seam * skin
        if rendered.eye_seam is not None:
            seam = np.maximum(seam, rendered.eye_seam)
        corrected = seam_matched(corrected, target, seam, footprint.grain * skin, shown, frame.size, self.tuning)
        return SwapLayers(box=footprint.region.box, base=np.ascontiguousarray(target), warped=rendered.warped,
                          corrected=corrected, alpha=alpha, changed=changed, color_weight=weight, level=scaled.level)


def _warped_maps(scaled: ScaledSource, maps: tuple[np.ndarray | None, ...], map_x: np.ndarray,
                 map_y: np.ndarray) -> tuple[np.ndarray | None, ...]:
    """The source's `maps` at `scaled`'s level (None: none) rendered on the target mesh (`map_x`, `map_y` in
    `scaled.image`'s pixels, brought to the level once for all of them: a magnified source's maps are read at level
    0)."""
    present = [values for values in maps if values is not None]
    if not present:
        return tuple(None for _ in maps)
    if scaled.magnification > 1:
        factor = np.float32(scaled.magnification)
        map_x, map_y = (map_x + np.float32(0.5)) / factor - np.float32(0.5), (map_y + np.float32(0.5)) / factor - np.float32(0.5)
    warped = iter(remapped_maps(present, map_x, map_y))
    return tuple(None if values is None else next(warped) for values in maps)


def lowered_eyes(openings: tuple[float, float], iris_depths: tuple[float, float], tuning: MeshTuning) -> float:
    """How surely (0-1) either eye is lowered over an eye looking down: under `lowered_eye_opening` with its iris
    centre `lowered_iris_depth` or further down between its lids, fading in over `lowered_fade` of the depth (and a
    tenth of that of the opening) before them, so a face looking down in a video does not pop."""
    fade = tuning.lowered_fade
    return max(float(mask_ops.smoothstep(np.float32((depth - tuning.lowered_iris_depth + fade) / fade))
                     * mask_ops.smoothstep(np.float32((tuning.lowered_eye_opening + 0.1 * fade - opening)
                                                      / (0.1 * fade))))
               for opening, depth in zip(openings, iris_depths, strict=True))

"""MeshTuning: the mesh swapper's own settings, which only the code chooses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


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
    mask_erode: float = 0.0  # the mask edge starts this far inside the face outline (the seam keeps the
    # source's own outline shading off the target)
    mask_erode_top: float = 0.06  # extra erosion growing toward the top of the forehead (hairline)
    mask_erode_bottom: float = 0.05  # extra erosion growing toward the chin (unstable jaw points)
    mask_feather: float = 0.06  # width of the alpha ramp at the face edge
    seam_fade: float = 0.6  # the seam (the target's light) runs over the ramp and fades over this many
    # ramp widths further in,
    seam_light: float = 0.05  # ... its light is the target's below this blur sigma,
    seam_grain: float = 0.02  # ... and the source's grain finer than this is held to the target's energy,
    seam_grain_fade: float = 1.5  # ... over the ramp and fading over this many ramp widths further in
    hole_feather: float = 0.02  # width of the alpha ramp at a kept mouth / kept eyes
    closed_mouth: float = 0.015  # a mouth whose inner-lip opening is below this (of the face size) is closed
    pin_closed_lips: bool = True  # ... and their shape (no shape transfer on them)
    lips_keep_grow: float = 0.02  # a closed target mouth under an open source one keeps its seam, this far out
    held_eye_opening: float = 0.6  # a target eye less open than this share of the source's (by the iris model) keeps
    # its opening: the shape transfer moves its lids with its corners only
    shut_eye_opening: float = 0.07  # ... and one less open than this (of its width squared) is shut: it keeps its
    # own lid line and lashes (lids lowered under make-up read 0.075-0.08, narrow laughing eyes 0.09-0.1: too
    # close to tell apart by the opening alone),
    lowered_eye_opening: float = 0.16  # ... as is one less open than this whose iris centre sits this far down
    lowered_iris_depth: float = 0.85  # between its lids (0 upper, 1 lower): lids lowered over an eye looking down
    # (such lids under make-up read 0.11-0.14 open, their iris centre 0.9-1.3 down; open eyes 0.2-0.75 down);
    lowered_fade: float = 0.1  # ... fading in over this much of the depth (a tenth of it of the opening) before them
    shut_eye_grow: float = 0.02  # ... this far past its lid ring,
    shut_source_eye_grow: float = 0.045  # ... and none of the source's eye shows on it: the target stays wherever the
    # source's lid ring, grown this much (of the source face), lands; ...
    shut_eye_seam: float = 0.05  # ... and the face takes the target's light (as at the seam) this far around that
    not_skin_distance: float = 3.5  # a source pixel this many standard scores (CIELAB, against its cheeks' skin) off
    # the skin colour starts to be something else (hair, a hat, frames) ...
    not_skin_ramp: float = 2.0  # ... and is surely so this many more on,
    not_skin_darker: float = 1.0  # ... if it is also darker (or, above the eyes, yellower) than the skin by this
    # many scores;
    hair_grow: float = 0.03  # such a region above the eyes grows and softens by this much
    frame_grow: float = 0.012  # ... and one in the glasses zone by this much
    frame_black: float = 4.5  # a source pixel darker than the skin by this many (lightness) scores is a frame's rim
    # even on a brow (and so is what lies within frame_grow of it)
    lens_rim: float = 0.012  # a source with dark rims has its lenses' whole outline traced (lenses.py) as a line this
    # wide, and not used twice as wide: lower rims are often light or tan, about the skin's lightness (0: not traced)
    hair_seam: float = 0.05  # the face takes the target's light (as at the seam) this far around the source's hair
    # or hat that is not used: the skin next to it lies in its shadow (not on the source's eyes, lips and brows)
    eye_keep_grow: float = 0.025  # kept eyes (keep_eyes) reach this far past the eyelid ring
    magnify_sharpen: float = 0.8  # unsharp amount on a magnified source: the edge contrast magnification spreads
    max_focus_blur: float = 0.012  # a source whose features are sharper than the target's is blurred to the
    # target's blur, by at most this (a Gaussian's sigma; more takes the likeness of small faces)
    detail_transfer: float = 0.15  # at most this share of the target's finest detail is carried into a source
    # that has less of it (a smaller, magnified source)
    detail_border: float = 0.14  # ... and all of it (up to the target's energy) from the mask edge to this far in,
    # fading to `detail_transfer` over as far again: the skin's grain runs on across the mask border
    detail_floor: float = 0.5  # a source with more fine detail than the target keeps at least this share of it
    detail_texture: float = 4.0  # the carried band's local energy is held to this many times its median on the
    # skin: pores and fine wrinkles pass, the target's own edges (glasses rims, nose outline, deep folds) stay faint
    color_strength: float = 1.0  # 0 = keep the source's colour, 1 = take the target's low frequencies
    color_sigma: float = 0.6  # colour blur sigma, as a fraction of the target's inter-eye distance
    chroma_sigma: float = 0.25  # ... for the chroma: light whose colour changes across the face is followed
    feature_color_damping: float = 0.5  # share of the colour gain withheld on lips and eyes
    lip_color: float = 1.0  # share of the lips' colour (CIELAB a*, b*) taken from the target's lips (its lipstick:
    # make-up is the target's, as its glasses are) ...
    lip_lightness: float = 0.5  # ... and of their lightness, this much of that (a dark lipstick's full darkness
    # takes some of the source's likeness)
    max_stretch: float = 2.5  # texture magnified (in area) this much more than the face as a whole starts to
    # fade out, and is gone at twice that (seen obliquely in the source, or mouth closed there and open here)
    shape_transfer: float = 0.9  # 0 = keep the target's feature layout, 1 = move it fully to the source's
    shape_rings: int = 4  # the shape shift grows from 0 on the face outline to full over this many mesh rings
    max_shape_shift: float = 0.08  # no vertex moves more than this
    max_facing_away: float = 0.14  # a face whose mesh faces away over more than this share of its area is seen in
    # profile: FaceMesh folds its far half onto the nose line, and the swap would paint an eye and a mouth where the
    # face has none; it is left as it is (profiles read 0.17-0.22, faces turned up to about 60 degrees under 0.09) ...
    profile_fade: float = 0.04  # ... after fading out over this much of that share before it (half way at 0.12)
    max_source_face: int = 768  # prepare_source scales larger source faces down to this many pixels
    interpolation: Literal["linear", "cubic"] = "cubic"  # the warp's kernel (the texture is magnified before it)

    def __post_init__(self) -> None:
        if self.interpolation not in ("linear", "cubic"):
            raise ValueError(f"interpolation must be 'linear' or 'cubic', not {self.interpolation!r}")
        for name in ("mask_erode", "mask_erode_top", "mask_erode_bottom", "color_sigma", "detail_border",
                     "max_focus_blur", "held_eye_opening", "shut_eye_opening", "lowered_eye_opening", "shut_eye_grow",
                     "shut_source_eye_grow", "shut_eye_seam", "hair_seam", "lens_rim", "not_skin_distance", "hair_grow",
                     "frame_grow"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        for name in ("mask_feather", "hole_feather", "not_skin_ramp", "lowered_fade", "chroma_sigma", "seam_fade",
                     "seam_light", "seam_grain", "seam_grain_fade"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        for name in ("color_strength", "feature_color_damping", "lip_color", "lip_lightness"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1]")
        if not 0.0 <= self.shape_transfer <= 1.0:
            raise ValueError("shape_transfer must lie in [0, 1]")
        if self.shape_rings < 1 or self.max_shape_shift < 0:
            raise ValueError("shape_rings must be >= 1 and max_shape_shift >= 0")
        if not 0.0 < self.max_facing_away <= 1.0 or not 0.0 < self.profile_fade <= self.max_facing_away:
            raise ValueError("max_facing_away must lie in (0, 1] and profile_fade in (0, max_facing_away]")
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

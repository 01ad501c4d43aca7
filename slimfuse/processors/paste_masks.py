"""The paste-back masks of the neural face processors: the run's selected mask types for a batch of face crops.

`FaceMasker` turns the run's MaskOptions (`--face-mask-types`, `--face-mask-blur`, `--face-mask-padding`, ...) into
one mask per crop through `mask_types.crop_masks`: the box, the mesh's face oval (landmarks in crop pixels), the occluder
(`--face-occluder-model`), the areas around the face's 68 points read off the mesh (`--face-mask-areas`) and the face
parser (`--face-parser-model`, `--face-mask-regions`), whose sessions come from the pool when their type is selected.
Every mask is computed on the target's crop, before it is processed, so the target's own glasses or hand count
whatever the swapper made of them (FaceFusion's swapper parses the swapped crop for its region mask).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from slimfuse.config import MaskOptions, MaskType
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.models.pool import ModelPool
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.mask_types import crop_masks, mesh_mask
from slimfuse.processors.occlusion import Occluder
from slimfuse.processors.parsing import FaceParser, ParserOptions


class FaceMasker:
    def __init__(self, pool: ModelPool, options: MaskOptions, oval: Sequence[int] | None) -> None:
        """oval: the mesh's face-oval point indices, needed when the "mesh" type is selected."""
        if "mesh" in options.face_mask_types and oval is None:
            raise ValueError("the mesh face mask needs the mesh's face oval")
        self.pool = pool
        self.options = options
        self.oval = tuple(oval) if oval is not None else None
        self.occluder_model = options.face_occluder_model
        self.parser_model = options.face_parser_model
        self.parser_options = ParserOptions(regions=options.face_mask_regions)

    @staticmethod
    def models_for(options: MaskOptions) -> tuple[str, ...]:
        """The catalog models the selected mask types run."""
        types = options.face_mask_types
        return (((options.face_occluder_model,) if "occlusion" in types else ())
                + ((options.face_parser_model,) if "region" in types else ()))

    def load(self) -> None:
        """Load (and check) the occluder and parser the selected types need, before any work for them."""
        if "occlusion" in self.options.face_mask_types:
            self.pool.session(self.occluder_model)
        if "region" in self.options.face_mask_types:
            self.pool.session(self.parser_model)

    def masks(self, crops: Sequence[FaceCrop]) -> list[np.ndarray]:
        """One float32 mask in [0, 1] per crop, of the crop's size: the minimum of the selected types."""
        types = self.options.face_mask_types
        images = [crop.image for crop in crops]
        occluder = Occluder(self.pool.session(self.occluder_model)) if "occlusion" in types else None
        parser = FaceParser(self.pool.session(self.parser_model), self.parser_options) if "region" in types else None
        mesh = None
        if "mesh" in types and self.oval is not None:
            mesh = [mesh_mask(crop.landmarks, self.oval, *crop.image.shape[:2]) for crop in crops]
        points_68 = [landmarks_68(crop.landmarks) for crop in crops] if "area" in types else None
        return crop_masks(images, self.options, occluder=occluder, parser=parser, mesh=mesh, points_68=points_68)

    def only(self, *types: MaskType) -> FaceMasker | None:
        """A masker of those of its selected types that are among `types` (None: it selects none of them)."""
        kept = tuple(name for name in self.options.face_mask_types if name in types)
        return FaceMasker(self.pool, replace(self.options, face_mask_types=kept), self.oval) if kept else None

    def for_enhancer(self) -> FaceMasker:
        """The face enhancer's masker, as FaceFusion has it: the box with the blur but no padding, and the
        occlusion mask when selected; not the mesh oval, the areas or the regions, so hair and the face's edge are
        enhanced too."""
        kept = tuple(name for name in self.options.face_mask_types if name == "occlusion")
        return FaceMasker(self.pool, replace(self.options, face_mask_types=("box", *kept),
                                             face_mask_padding=(0, 0, 0, 0)), self.oval)

    def box_only(self) -> FaceMasker:
        """The box with the blur and no padding, alone (FaceFusion's face editor pastes with that only)."""
        return FaceMasker(self.pool, replace(self.options, face_mask_types=("box",), face_mask_padding=(0, 0, 0, 0)),
                          self.oval)

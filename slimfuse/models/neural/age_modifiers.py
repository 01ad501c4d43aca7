"""Catalog entries: the age modifiers users bring (none ships in a registry package; see the README).

Facts (FaceFusion 3.8.1's age_modifier processor and model table; read, not copied):
- fran (ry-lu, MIT, models-3.6.0): `target` [1, 3, 1024, 1024], the face aligned to ffhq_512 at 1024 px, RGB / 255;
  `direction` [2], the face's age and the age wanted, each / 100 and clipped to [0, 1] (the age is the middle of
  the fairface classifier's age group; the age wanted adds --age-modifier-direction in years). The first output is
  the re-aged face, RGB in [0, 1], pasted back through a box mask.
- styleganex_age (williamyang1991, S-Lab License 1.0, models-3.1.0): `target` [1, 3, 256, 256] (ffhq_512 at 256 px),
  `target_with_background` [1, 3, 384, 384] (the face with its surroundings: the five points drawn 0.875 times
  closer around the nose tip, aligned to styleganex_384 at 384 px), both RGB scaled to [-1, 1]; `direction`, a
  scalar (FaceFusion feeds a 0-d array): --age-modifier-direction -100..100 mapped linearly onto 2.5..-2.5. The
  first output is the surroundings crop at 4 times its size, in [-1, 1]; FaceFusion brings it to 1024 px, gives it
  the input's colours back (a coarse-to-fine colour transfer) and pastes it through the surroundings' box mask.
Output names are not confirmed from a public source; slimfuse reads the first output by position.
"""
from __future__ import annotations

from types import MappingProxyType

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

FRAN = "fran"
STYLEGANEX_AGE = "styleganex_age"
TARGET_INPUT = "target"
BACKGROUND_INPUT = "target_with_background"
DIRECTION_INPUT = "direction"
HALF = (0.5, 0.5, 0.5)

BACKGROUND_TEMPLATE = "styleganex_384"
BACKGROUND_SIZE = 384
BACKGROUND_POINTS_SCALE = 0.875
"""styleganex_age's surroundings crop: its template, size, and how much closer its five points are drawn around the
nose tip before the alignment."""
BACKGROUND_OUTPUT_SCALE = 4
"""styleganex_age's output is its surroundings crop at this many times the size."""
STYLEGANEX_PASTE_SIZE = 1024
"""The size styleganex_age's output is brought to before it is pasted back (4 x its `target` size)."""
STYLEGANEX_DIRECTION = (2.5, -2.5)
"""styleganex_age's direction at --age-modifier-direction -100 and 100."""

MODELS: tuple[ModelSpec, ...] = (
    neural_spec(
        FRAN, "age_modifier", "MIT (FRAN, ry-lu)",
        "FRAN face re-aging, 1024 px: from the face's age (fairface's group) by --age-modifier-direction years",
        "models-3.6.0",
        ModelIO(inputs=(TensorSpec(TARGET_INPUT, (1, 3, 1024, 1024)), TensorSpec(DIRECTION_INPUT, (2,))),
                outputs=(TensorSpec("output", (1, 3, 1024, 1024)),), template="ffhq_512", crop_size=1024),
    ),
    neural_spec(
        STYLEGANEX_AGE, "age_modifier", "S-Lab License 1.0, non-commercial (StyleGANEX, williamyang1991)",
        "StyleGANEX age editing of the face and its surroundings, 256 px face, 384 px surroundings, pasted at 1024 px",
        "models-3.1.0",
        ModelIO(inputs=(TensorSpec(TARGET_INPUT, (1, 3, 256, 256)),
                        TensorSpec(BACKGROUND_INPUT, (1, 3, BACKGROUND_SIZE, BACKGROUND_SIZE)),
                        TensorSpec(DIRECTION_INPUT, ())),
                outputs=(TensorSpec("output", (1, 3, BACKGROUND_OUTPUT_SCALE * BACKGROUND_SIZE,
                                               BACKGROUND_OUTPUT_SCALE * BACKGROUND_SIZE)),),
                template="ffhq_512", crop_size=256, mean=HALF, std=HALF, output_range=(-1.0, 1.0)),
    ),
)

AGE_MODIFIER_NAMES: tuple[str, ...] = tuple(spec.name for spec in MODELS)
NEEDS_AGE = MappingProxyType({FRAN: True, STYLEGANEX_AGE: False})
"""Whether the model takes the face's own age (from the fairface classifier) besides the direction."""

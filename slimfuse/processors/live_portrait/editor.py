"""The face editor as a FaceProcessor: each face's brows, gaze, eyes, lips, mouth and head moved by the editor's
values (`--face-editor-*`, each -1 to 1), which a live session changes while it runs (EditsFaces).

crop: the face aligned to ffhq_512 at 512 px with its five points spread 1.5 times about the nose (more of the
head, for the head's turns). process, per face: its appearance features and motion; the expression edited and kept
within LivePortrait's range, the head turned (within 30, 60 and 20 degrees, or the face's own angle where that is
further), the eyes' and lips' opening asked of the retargeters (their ratios read off the face's 68 points), the
keypoints stitched to the face around them; the generator redraws the face with its keypoints so moved. The alpha:
the box with the blur and no padding, as FaceFusion has it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from slimfuse.config import FaceEditorOptions
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.faces.types import Face
from slimfuse.models.neural import live_portrait as lp
from slimfuse.models.pool import ModelPool
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto, aligned_crop
from slimfuse.processors.live_portrait import edits
from slimfuse.processors.live_portrait.motion import ANGLE_LIMITS, Motion, limit_angle, limit_expression, rotation
from slimfuse.processors.live_portrait.network import LivePortrait
from slimfuse.processors.paste_masks import FaceMasker

TEMPLATE = "ffhq_512"
SPREAD = 1.5
"""The five points' spread about the nose before alignment."""


class FaceEditor:
    def __init__(self, pool: ModelPool, options: FaceEditorOptions, masker: FaceMasker) -> None:
        """masker: the run's, as the editor takes it (`FaceMasker.box_only`)."""
        self.network = LivePortrait(pool, lp.EDITOR_MODELS[options.face_editor_model])
        self.values: dict[str, float] = options.values()
        self.masker = masker
        self.preparation_models: tuple[str, ...] = ()
        self.generator_models: tuple[str, ...] = (lp.GENERATOR,)

    def edit_faces(self, values: Mapping[str, float]) -> None:
        """Edit with `values` (by the options' names less `face_editor_`; those not given stay) from the next
        batch on. ValueError for an unknown name or a value outside -1..1."""
        for name, value in values.items():
            if name not in self.values:
                raise ValueError(f"the face editor has no {name}")
            if not -1.0 <= float(value) <= 1.0:
                raise ValueError(f"{name} must lie between -1 and 1, got {value}")
        self.values.update({name: float(value) for name, value in values.items()})

    def prepare(self, sources: Sequence[SourcePhoto]) -> None:
        self.network.load()
        self.masker.load()

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return aligned_crop(frame, face, TEMPLATE, lp.CROP_SIZE, SPREAD)

    def process(self, crops: Sequence[FaceCrop], prepared: None) -> list[Processed]:
        if not crops:
            return []
        values = dict(self.values)  # as they are now, for the whole batch
        images = [self.edit(crop.image, landmarks_68(crop.landmarks), values) for crop in crops]
        return [Processed(image=image, alpha=alpha) for image, alpha in zip(images, self.masker.masks(crops),
                                                                             strict=True)]

    def edit(self, image: np.ndarray, points_68: np.ndarray, values: Mapping[str, float]) -> np.ndarray:
        """`image` (a 512 px crop) redrawn with its face edited by `values`; points_68: its 68 points (any pixels:
        only their ratios are read)."""
        model_input = self.network.model_input(image)
        features = self.network.features(model_input)
        motion = self.network.motion(model_input)
        own = motion.posed()
        expression = limit_expression(edits.edited_expression(motion.expression, values))
        wanted = motion.posed(expression, turned(motion, values))
        eyes = (edits.open_ratio(points_68, edits.LEFT_EYE), edits.open_ratio(points_68, edits.RIGHT_EYE))
        wanted = wanted + self.opened(own, lp.EYE_RETARGETER, eyes, values.get("eye_open_ratio", 0.0),
                                      edits.EYE_OPEN, edits.EYE_CLOSED)
        lips = (edits.open_ratio(points_68, edits.LIPS),)
        wanted = wanted + self.opened(own, lp.LIP_RETARGETER, lips, values.get("lip_open_ratio", 0.0),
                                      edits.LIP_OPEN, edits.LIP_CLOSED)
        return self.network.generate(features, self.network.stitch(wanted, own), own)

    def opened(self, own: np.ndarray, model: str, ratios: tuple[float, ...], value: float, open_ratio: float,
               closed_ratio: float) -> np.ndarray | float:
        """The keypoints' change that opens (value above 0) or closes (below) the eyes or lips by the value's share,
        from the face's own open `ratios`; 0 at 0."""
        if value == 0:
            return 0.0
        wanted = open_ratio if value > 0 else closed_ratio
        return self.network.retarget(model, own, (*ratios, wanted)) * np.float32(abs(value))


def turned(motion: Motion, values: Mapping[str, float]) -> np.ndarray:
    """The face's rotation with the head edits made, each angle within its limit."""
    changes = edits.edited_angles(values)
    own = (motion.pitch, motion.yaw, motion.roll)
    angles = (limit_angle(angle, angle + change, limit)
              for angle, change, limit in zip(own, changes, ANGLE_LIMITS.values(), strict=True))
    return rotation(*angles)

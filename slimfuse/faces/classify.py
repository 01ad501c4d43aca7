"""What FaceFusion's fairface classifier tells of a face: gender, race and age group, for selection by them.

The face is aligned to the model's template at its size (arcface_112_v2, 224 px), RGB (x/255 - mean) / std; the
model gives the race, gender and age class indices, mapped to FaceFusion's words: genders male / female, races
white, black, latino, asian (east and southeast asian both), indian, arabic (middle eastern), and nine age groups
as FaceFusion has them (0-1, 3-8, 10-18, 20-28, ..., 70-99: its ranges leave out each group's last year).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from slimfuse.faces.align import five_points, warp_face
from slimfuse.faces.types import Face
from slimfuse.models.neural.classifiers import FAIRFACE
from slimfuse.models.pool import ModelPool
from slimfuse.models.tensors import to_tensor

RACES_BY_ID: tuple[str, ...] = ("white", "black", "latino", "asian", "asian", "indian", "arabic")
AGES_BY_ID: tuple[range, ...] = (range(0, 2), range(3, 9), range(10, 19), range(20, 29), range(30, 39),
                                 range(40, 49), range(50, 59), range(60, 69), range(70, 100))


@dataclass(frozen=True)
class FaceClasses:
    gender: str
    race: str
    age: range


def classes_of(race_id: int, gender_id: int, age_id: int) -> FaceClasses:
    """The words of the model's class indices, as FaceFusion reads them (gender 1 is female, any other male; an
    unknown race is white, an unknown age group the oldest)."""
    race = RACES_BY_ID[race_id] if 0 <= race_id < len(RACES_BY_ID) else RACES_BY_ID[0]
    age = AGES_BY_ID[age_id] if 0 <= age_id < len(AGES_BY_ID) else AGES_BY_ID[-1]
    return FaceClasses(gender="female" if gender_id == 1 else "male", race=race, age=age)


class FaceClassifier:
    def __init__(self, pool: ModelPool, model: str = FAIRFACE) -> None:
        self.pool = pool
        self.model = model
        io = pool.store.catalog.get(model).io
        if io is None or io.template is None or io.crop_size is None:
            raise ValueError(f"{model} is not a classifier with an alignment template")
        self.io = io

    def classify(self, image: np.ndarray, face: Face) -> FaceClasses:
        if face.landmarks is None:
            raise ValueError("the face has no landmarks")
        return self.classify_at(image, five_points(face.landmarks))

    def classify_at(self, image: np.ndarray, points: np.ndarray) -> FaceClasses:
        """The classes of the face whose five points (template order) lie at `points` in `image`."""
        crop, _ = warp_face(image, points, self.io.template or "", self.io.crop_size or 224)
        tensor = to_tensor([crop], self.io.mean, self.io.std)
        race, gender, age = self.pool.session(self.model).run(None, {self.io.inputs[0].name: tensor})[:3]
        return classes_of(*(int(np.asarray(value).reshape(-1)[0]) for value in (race, gender, age)))

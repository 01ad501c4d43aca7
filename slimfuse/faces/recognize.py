"""Face recognizers behind one small interface: dlib's ResNet descriptor (the default) and ArcFace (w600k_r50).

Reference selection and the check that several source photos show one person use `distance` and
`same_person`; the neural swappers take their source identity from ArcFace whatever is selected here.
dlib: Euclidean distance of 128-d descriptors, same person below 0.6. ArcFace: 1 - cosine similarity of the
L2-normalised 512-d embeddings, same person below about 0.6 (cosine similarity above 0.4).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from slimfuse.faces.align import five_points, warp_face
from slimfuse.faces.identity import PREDICTOR, SAME_PERSON_DISTANCE, IdentityModel
from slimfuse.faces.identity import RECOGNIZER as DLIB_RECOGNIZER
from slimfuse.faces.types import Face
from slimfuse.models.choices import RECOGNIZERS
from slimfuse.models.neural.recognizers import ARCFACE
from slimfuse.models.pool import ModelPool
from slimfuse.models.tensors import run_batched, to_tensor



class Recognizer(Protocol):
    name: str
    same_person: float

    def descriptor(self, image: np.ndarray, face: Face) -> np.ndarray: ...

    def combined(self, descriptors: list[np.ndarray]) -> np.ndarray: ...

    def distance(self, a: np.ndarray, b: np.ndarray) -> float: ...


class DlibRecognizer:
    name = "dlib"
    same_person = SAME_PERSON_DISTANCE

    def __init__(self, pool: ModelPool) -> None:
        self.model = IdentityModel(pool)

    def descriptor(self, image: np.ndarray, face: Face) -> np.ndarray:
        return self.model.descriptor(image, face)

    def combined(self, descriptors: list[np.ndarray]) -> np.ndarray:
        return self.model.combined(descriptors)

    def distance(self, a: np.ndarray, b: np.ndarray) -> float:
        return float(np.linalg.norm(np.asarray(a) - np.asarray(b)))


class ArcFaceRecognizer:
    """ArcFace: the face aligned to the model's template (arcface_112_v2, 112 px), RGB (x - 127.5) / 127.5."""

    same_person = 0.6

    def __init__(self, pool: ModelPool, model: str = ARCFACE) -> None:
        self.pool = pool
        self.name = model
        spec = pool.store.catalog.get(model)
        if spec.io is None or spec.io.template is None or spec.io.crop_size is None:
            raise ValueError(f"{model} is not a recognizer with an alignment template")
        self.io = spec.io

    def crop(self, image: np.ndarray, face: Face) -> np.ndarray:
        if face.landmarks is None:
            raise ValueError("the face has no landmarks")
        return self.aligned(image, five_points(face.landmarks))

    def aligned(self, image: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The face with five points `points` aligned to the model's template at its size."""
        crop, _ = warp_face(image, points, self.io.template or "", self.io.crop_size or 112)
        return crop

    def raw_embeddings(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        """(N, 512) embeddings as the model gives them, for N aligned crops (batched where the model allows)."""
        session = self.pool.session(self.name)
        tensor = to_tensor(crops, self.io.mean, self.io.std)
        output = run_batched(session, {self.io.inputs[0].name: tensor})
        return output.reshape(len(crops), -1).astype(np.float32)

    def embeddings(self, image: np.ndarray, faces: Sequence[Face]) -> np.ndarray:
        """(N, 512) L2-normalised embeddings of the faces of one image."""
        if not faces:
            return np.zeros((0, 512), dtype=np.float32)
        return normalise(self.raw_embeddings([self.crop(image, face) for face in faces]))

    def descriptor(self, image: np.ndarray, face: Face) -> np.ndarray:
        return self.embeddings(image, [face])[0]

    def combined(self, descriptors: list[np.ndarray]) -> np.ndarray:
        return normalise(np.mean(np.stack(descriptors), axis=0))

    def distance(self, a: np.ndarray, b: np.ndarray) -> float:
        return float(1.0 - np.dot(normalise(a), normalise(b)))


def normalise(vectors: np.ndarray) -> np.ndarray:
    """L2-normalised along the last axis."""
    array = np.asarray(vectors, dtype=np.float32)
    norm = np.linalg.norm(array, axis=-1, keepdims=True)
    return (array / np.maximum(norm, np.float32(1e-12))).astype(np.float32)


def recognizer_models(name: str) -> tuple[str, ...]:
    """The catalog models behind recognizer `name` (what the pool holds for it)."""
    return (PREDICTOR, DLIB_RECOGNIZER) if name == "dlib" else (name,)


def build_recognizer(name: str, pool: ModelPool) -> Recognizer:
    if name == "dlib":
        return DlibRecognizer(pool)
    if name == ARCFACE:
        return ArcFaceRecognizer(pool, name)
    raise ValueError(f"unknown face recognizer {name!r}; known: {', '.join(RECOGNIZERS)}")

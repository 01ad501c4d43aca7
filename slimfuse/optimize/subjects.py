"""What a model sees and how its outputs are compared, per kind of model, for the quality gate and calibration.

A subject holds the inputs a model takes on the calibration faces (`feeds`, also the data static quantisation
calibrates on) and measures a variant against the original on them (`measure`), with the metric of the model's
kind (see slimfuse.models.spec.METRICS):
- landmarkers: mean landmark error in pixels of the model's crop (FaceMesh's 192 px crop, the iris model's 64 px);
- detectors: the project's own decoding and merging (slimfuse.faces.blazeface, slimfuse.faces.neural_detect) on
  both models, then box IoU, recall and precision;
- recognizers and embedding converters: cosine similarity of the output vectors;
- swappers, enhancers, frame enhancers and occluders: PSNR and SSIM of the generated image, and for faces the
  identity distance (ArcFace when its file is in the store, else dlib) between the two generated faces;
- face parsers: the share of pixels whose most likely class (the region the masks are cut from) agrees.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import cv2
import numpy as np

from slimfuse.errors import UsageError
from slimfuse.faces.align import five_points, landmarks_in_crop, warp_face
from slimfuse.faces.blazeface import SPECS, DetectorOptions, FaceDetector, Session
from slimfuse.faces.blazeface import letterbox as blazeface_letterbox
from slimfuse.faces.geometry import rotated_square
from slimfuse.faces.landmarks import LEFT_EYE_OUTER, MESH_SIZE, RIGHT_EYE_OUTER, crop_from_landmarks
from slimfuse.faces.types import Face
from slimfuse.models.neural.recognizers import ARCFACE
from slimfuse.models.spec import BOX_IOU, COSINE, LANDMARK_ERROR, PIXEL_AGREEMENT, PSNR, ModelSpec
from slimfuse.models.tensors import to_tensor
from slimfuse.optimize.calibration import CalibrationImage
from slimfuse.optimize.metrics import box_agreement, cosine_similarities, landmark_errors, psnr, ssim
from slimfuse.processors.parsing import parser_input

Feeds = dict[str, np.ndarray]
Details = dict[str, float | int | str]

LANDMARK_OUTPUTS: dict[str, tuple[int, ...]] = {"face_landmark": (0,), "iris_landmark": (0, 1)}
"""Which outputs hold (x, y, z) landmark triples in crop pixels (FaceMesh's second output is a presence logit)."""
IRIS_SIZE = 64
IRIS_CROP_SCALE = 2.0
"""The eye crop's side, in eye widths (corner to corner)."""
RIGHT_EYE_INNER, LEFT_EYE_INNER = 133, 362
FRAME_TILE = 96
"""Side of the tiles a frame enhancer is gated on (its input size is free; its cost grows with it)."""


class Subject(Protocol):
    metric: str

    def feeds(self) -> list[Feeds]: ...

    def measure(self, original: Session, variant: Session) -> tuple[float, Details]: ...


@dataclass
class LandmarkSubject:
    inputs: list[Feeds]
    crop_size: int
    outputs: tuple[int, ...] | None = None
    """Indices of the outputs holding landmark triples; None: every output whose size is a multiple of 3."""
    metric: str = LANDMARK_ERROR

    def feeds(self) -> list[Feeds]:
        return self.inputs

    def points(self, outputs: Sequence[np.ndarray]) -> np.ndarray:
        chosen = self.outputs if self.outputs is not None else tuple(
            index for index, output in enumerate(outputs) if np.asarray(output).size % 3 == 0)
        return np.concatenate([np.asarray(outputs[index], dtype=np.float64).reshape(-1, 3) for index in chosen])

    def measure(self, original: Session, variant: Session) -> tuple[float, Details]:
        errors = np.stack([landmark_errors(self.points(original.run(None, feed)), self.points(variant.run(None, feed)))
                           for feed in self.inputs])
        per_sample = errors.mean(axis=1)
        return float(errors.mean()), {
            "crop_px": self.crop_size, "samples": len(self.inputs), "points": int(errors.shape[1]),
            "max_px": _finite_or_nan(errors.max()), "p95_px": _finite_or_nan(np.percentile(errors, 95)),
            "worst_sample_mean_px": _finite_or_nan(per_sample.max()),
        }


@dataclass
class DetectorSubject:
    images: list[np.ndarray]
    detector: Callable[[Session], Any]
    """The project's detector around a session (its decoding and merging)."""
    tensor: Callable[[np.ndarray], Feeds]
    """The model's input for a whole image (for calibration)."""
    metric: str = BOX_IOU

    def feeds(self) -> list[Feeds]:
        return [self.tensor(image) for image in self.images]

    def measure(self, original: Session, variant: Session) -> tuple[float, Details]:
        reference = [_boxes(self.detector(original).detect(image, scan_tiles=False)) for image in self.images]
        found = [_boxes(self.detector(variant).detect(image, scan_tiles=False)) for image in self.images]
        agreement = box_agreement(reference, found)
        return agreement.iou, {
            "samples": len(self.images), "recall": agreement.recall, "precision": agreement.precision,
            "matched_iou": agreement.matched_iou, "original_faces": agreement.reference_faces,
            "variant_faces": agreement.variant_faces,
        }


@dataclass
class VectorSubject:
    inputs: list[Feeds]
    metric: str = COSINE

    def feeds(self) -> list[Feeds]:
        return self.inputs

    def measure(self, original: Session, variant: Session) -> tuple[float, Details]:
        a = np.concatenate([np.asarray(original.run(None, feed)[0]).reshape(1, -1) for feed in self.inputs])
        b = np.concatenate([np.asarray(variant.run(None, feed)[0]).reshape(1, -1) for feed in self.inputs])
        similarities = cosine_similarities(a, b)
        return _mean(similarities), {"samples": len(self.inputs), "min": _finite_or_nan(similarities.min())}


Identity = Callable[[np.ndarray, int], np.ndarray]
"""Descriptor of a generated face (RGB uint8 crop) of sample i."""


@dataclass
class ImageSubject:
    inputs: list[Feeds]
    output_range: tuple[float, float] = (0.0, 1.0)
    channels_last: bool = False
    identity: Identity | None = None
    distance: Callable[[np.ndarray, np.ndarray], float] | None = None
    recognizer: str = ""
    metric: str = PSNR

    def feeds(self) -> list[Feeds]:
        return self.inputs

    def image(self, output: np.ndarray) -> np.ndarray:
        """(H, W, C) float in [0, 1] (not clipped where the output is not finite)."""
        array = np.asarray(output, dtype=np.float32)
        nchw = array.transpose(0, 3, 1, 2) if self.channels_last else array
        low, high = self.output_range
        unit = (nchw[0] - np.float32(low)) / np.float32(high - low)
        finite = np.isfinite(unit)
        return np.where(finite, np.clip(unit, 0.0, 1.0), unit).transpose(1, 2, 0)

    def measure(self, original: Session, variant: Session) -> tuple[float, Details]:
        psnrs, ssims, distances = [], [], []
        for index, feed in enumerate(self.inputs):
            a = self.image(original.run(None, feed)[0])
            b = self.image(variant.run(None, feed)[0])
            psnrs.append(psnr(a, b))
            ssims.append(ssim(a, b))
            if self.identity is not None and self.distance is not None:
                if np.all(np.isfinite(b)):
                    distances.append(self.distance(self.identity(_to_uint8(a), index),
                                                   self.identity(_to_uint8(b), index)))
                else:
                    distances.append(math.inf)
        details: Details = {"samples": len(self.inputs), "psnr_min_db": min(psnrs), "ssim": _mean(np.array(ssims)),
                            "ssim_min": min(ssims)}
        if distances:
            details.update({"identity_distance": _mean(np.array(distances)),
                            "identity_distance_max": _finite_or_nan(max(distances)), "recognizer": self.recognizer})
        return _mean(np.array(psnrs)), details


@dataclass
class LabelSubject:
    """A face parser: its class maps compared pixel by pixel."""

    inputs: list[Feeds]
    metric: str = PIXEL_AGREEMENT

    def feeds(self) -> list[Feeds]:
        return self.inputs

    def measure(self, original: Session, variant: Session) -> tuple[float, Details]:
        agreements = [float(np.mean(np.argmax(original.run(None, feed)[0], axis=1)
                                    == np.argmax(variant.run(None, feed)[0], axis=1))) for feed in self.inputs]
        return _mean(np.array(agreements)), {"samples": len(self.inputs), "agreement_min": min(agreements)}


@dataclass
class SubjectContext:
    """What building a subject needs: the calibration images with their faces, and a pool of original models."""

    images: list[CalibrationImage]
    pool: Any
    """A ModelPool of the original models (no variants)."""
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def faces(self) -> list[tuple[np.ndarray, Face]]:
        return [(item.image, item.face) for item in self.images if item.face is not None]


def build_subject(spec: ModelSpec | None, context: SubjectContext, metric: str, input_name: str = "",
                  input_shape: Sequence[int | str | None] = ()) -> Subject:
    """The subject of a catalog model, or (spec None) of a file the catalog does not know, compared with `metric`
    and fed face crops as `input_name` at the size and layout of `input_shape`."""
    if spec is None:
        return _generic_subject(context, metric, input_name, input_shape)
    kind, io = spec.kind, spec.io
    if spec.name == "face_landmark":
        return LandmarkSubject(_mesh_crops(context, MESH_SIZE, "input_1"), MESH_SIZE, LANDMARK_OUTPUTS["face_landmark"])
    if spec.name == "iris_landmark":
        return LandmarkSubject(_eye_crops(context), IRIS_SIZE, LANDMARK_OUTPUTS["iris_landmark"])
    if spec.name in (SPECS["short"].model, SPECS["full"].model):
        return _blazeface_subject(context, "short" if spec.name == SPECS["short"].model else "full")
    if kind == "detector":
        return _neural_detector_subject(context, spec.name)
    if io is None:
        raise UsageError(detail=f"{spec.name}: no quality gate for a {kind} model")
    if kind == "recognizer":
        return VectorSubject([{io.inputs[0].name: to_tensor([crop], io.mean, io.std)}
                              for crop, _ in _aligned(context, io.template or "arcface_112_v2", io.crop_size or 112)])
    if kind == "embedding_converter":
        return VectorSubject([{io.inputs[0].name: vector[None]} for vector in _embeddings(context)])
    if kind in ("swapper", "enhancer"):
        return _face_image_subject(context, spec)
    if kind == "frame_enhancer":
        tiles = [_centre_tile(image, face) for image, face in context.faces]
        return ImageSubject([{io.inputs[0].name: to_tensor([tile])} for tile in tiles], io.output_range)
    if kind == "occluder":
        crops = [crop for crop, _ in _aligned(context, "arcface_128", io.crop_size or 256)]
        return ImageSubject([{io.inputs[0].name: (crop[:, :, ::-1].astype(np.float32) / 255.0)[None]}
                             for crop in crops], channels_last=True)
    if kind == "parser":
        size = io.crop_size or 512
        return LabelSubject([{io.inputs[0].name: parser_input(crop, size)[None]}
                             for crop, _ in _aligned(context, "arcface_128", size)])
    raise UsageError(detail=f"{spec.name}: no quality gate for a {kind} model")


# Catalog models -----------------------------------------------------------------------------------------------

def _mesh_crops(context: SubjectContext, size: int, input_name: str, channels_last: bool = True) -> list[Feeds]:
    """FaceMesh's own crop of each face (eyes level, 1.5 x the face), RGB / 255."""
    feeds = []
    for image, face in context.faces:
        assert face.landmarks is not None
        centre, side, angle = crop_from_landmarks(face.landmarks)
        matrix = rotated_square(centre, side, angle, size)
        crop = cv2.warpAffine(image, matrix, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        tensor = (crop.astype(np.float32) / 255.0)[None]
        feeds.append({input_name: tensor if channels_last else np.ascontiguousarray(tensor.transpose(0, 3, 1, 2))})
    return feeds


def _eye_crops(context: SubjectContext) -> list[Feeds]:
    """Each eye, level, 2 eye widths across, at 64 px, RGB / 255; the left eye mirrored as MediaPipe feeds it."""
    feeds = []
    for image, face in context.faces:
        assert face.landmarks is not None
        points = face.landmarks[:, :2]
        for outer, inner, mirror in ((RIGHT_EYE_OUTER, RIGHT_EYE_INNER, False), (LEFT_EYE_OUTER, LEFT_EYE_INNER, True)):
            a, b = points[outer], points[inner]
            left, right = (a, b) if a[0] <= b[0] else (b, a)
            angle = math.atan2(right[1] - left[1], right[0] - left[0])
            side = IRIS_CROP_SCALE * float(np.linalg.norm(b - a))
            matrix = rotated_square((a + b) / 2, max(side, 4.0), angle, IRIS_SIZE)
            crop = cv2.warpAffine(image, matrix, (IRIS_SIZE, IRIS_SIZE), flags=cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_REPLICATE)
            if mirror:
                crop = crop[:, ::-1]
            feeds.append({"input_1": (np.ascontiguousarray(crop).astype(np.float32) / 255.0)[None]})
    return feeds


def _blazeface_subject(context: SubjectContext, key: str) -> DetectorSubject:
    spec = SPECS[key]

    def detector(session: Session) -> FaceDetector:
        return FaceDetector({key: session}, DetectorOptions(model=key))

    return DetectorSubject([item.image for item in context.images], detector,
                           lambda image: {spec.input_name: blazeface_letterbox(image, spec.size)[0]})


def _neural_detector_subject(context: SubjectContext, name: str) -> DetectorSubject:
    from slimfuse.faces.neural_detect import NeuralFaceDetector, detector_spec, letterbox

    spec = detector_spec(name)
    return DetectorSubject([item.image for item in context.images], lambda session: NeuralFaceDetector(session, spec),
                           lambda image: {spec.input_name: letterbox(image, spec)[0]})


def _aligned(context: SubjectContext, template: str, size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each face aligned to `template` at `size`, with its mesh in crop pixels."""
    found = []
    for image, face in context.faces:
        assert face.landmarks is not None
        crop, matrix = warp_face(image, five_points(face.landmarks), template, size)
        found.append((crop, landmarks_in_crop(face.landmarks, matrix)))
    return found


def _arcface(context: SubjectContext) -> Any | None:
    """ArcFace over the original models when its file is in the store, else None."""
    if "arcface" not in context.cache:
        from slimfuse.faces.recognize import ArcFaceRecognizer

        store = context.pool.store
        present = store.location(ARCFACE).is_file()
        context.cache["arcface"] = ArcFaceRecognizer(context.pool, ARCFACE) if present else None
    return context.cache["arcface"]


def _embeddings(context: SubjectContext) -> list[np.ndarray]:
    """ArcFace embeddings of the calibration faces, or (without ArcFace) fixed random unit vectors."""
    arcface = _arcface(context)
    if arcface is not None:
        crops = [arcface.crop(image, face) for image, face in context.faces]
        return list(arcface.raw_embeddings(crops).astype(np.float32))
    vectors = np.random.default_rng(0).normal(size=(len(context.faces), 512)).astype(np.float32)
    return list(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


def _recognizer(context: SubjectContext) -> Any:
    arcface = _arcface(context)
    if arcface is not None:
        return arcface
    from slimfuse.faces.recognize import DlibRecognizer

    return DlibRecognizer(context.pool)


def _face_image_subject(context: SubjectContext, spec: ModelSpec) -> ImageSubject:
    io = spec.io
    assert io is not None and io.template is not None and io.crop_size is not None
    aligned = _aligned(context, io.template, io.crop_size)
    shared: Feeds = {}
    if spec.kind == "swapper":
        shared = {"source": _swap_source(context, spec.name)}
    elif any(tensor.name == "weight" for tensor in io.inputs):
        shared = {"weight": np.array([0.5], dtype=np.float64)}
    feeds = [{io.inputs[0].name: to_tensor([crop], io.mean, io.std), **shared} for crop, _ in aligned]
    recognizer = _recognizer(context)
    landmarks = [points for _, points in aligned]

    def identity(image: np.ndarray, index: int) -> np.ndarray:
        points = landmarks[index]
        box = np.concatenate([points[:, :2].min(0), points[:, :2].max(0)]).astype(np.float32)
        face = Face(box=box, score=1.0, keypoints=np.zeros((6, 2), dtype=np.float32), landmarks=points)
        return recognizer.descriptor(image, face)

    return ImageSubject(feeds, io.output_range, identity=identity, distance=recognizer.distance,
                        recognizer=recognizer.name)


def _swap_source(context: SubjectContext, name: str) -> np.ndarray:
    """The swapper's `source` input for the first calibration face, made as a swap makes it."""
    from slimfuse.processors.base import SourcePhoto
    from slimfuse.processors.onnx_swap import swap_source

    image, face = context.faces[0]
    return swap_source(context.pool, name, [SourcePhoto(image=image, face=face)]).tensor


def _centre_tile(image: np.ndarray, face: Face) -> np.ndarray:
    centre = (face.box[:2] + face.box[2:]) / 2
    x0 = int(np.clip(centre[0] - FRAME_TILE / 2, 0, max(image.shape[1] - FRAME_TILE, 0)))
    y0 = int(np.clip(centre[1] - FRAME_TILE / 2, 0, max(image.shape[0] - FRAME_TILE, 0)))
    return np.ascontiguousarray(image[y0:y0 + FRAME_TILE, x0:x0 + FRAME_TILE])


# Files the catalog does not know ------------------------------------------------------------------------------

def _generic_subject(context: SubjectContext, metric: str, input_name: str,
                     shape: Sequence[int | str | None]) -> Subject:
    """Face crops (FaceMesh's square crop, RGB / 255) at the file's input size and layout; the outputs read as
    landmark triples in crop pixels, an embedding, or an image in [0, 1], by `metric`."""
    dims = list(shape)
    if len(dims) != 4 or 3 not in (dims[1], dims[3]):
        raise UsageError(detail=f"a file the catalog does not know is gated on face crops: it needs one image input "
                         f"[1, 3, S, S] or [1, S, S, 3], found {dims}")
    channels_last = dims[3] == 3 and dims[1] != 3
    size = dims[1] if channels_last else dims[2]
    size = size if isinstance(size, int) and size > 0 else MESH_SIZE
    feeds = _mesh_crops(context, size, input_name, channels_last)
    if metric == LANDMARK_ERROR:
        return LandmarkSubject(feeds, size)
    if metric == COSINE:
        return VectorSubject(feeds)
    if metric == PSNR:
        return ImageSubject(feeds, channels_last=channels_last)
    raise UsageError(detail=f"--metric {metric} needs a model of the catalog (its decoding); for other files "
                     f"use {LANDMARK_ERROR}, {COSINE} or {PSNR}")


def _boxes(faces: Sequence[Face]) -> np.ndarray:
    return np.array([face.box for face in faces], dtype=np.float64).reshape(-1, 4)


def _to_uint8(unit: np.ndarray) -> np.ndarray:
    return np.rint(np.clip(unit, 0.0, 1.0) * 255.0).astype(np.uint8)


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def _finite_or_nan(value: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else math.nan

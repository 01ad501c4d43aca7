"""The shape of a model spec: where a model comes from, how it is checked, and how it is called."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class Conversion(StrEnum):
    """How the fetched file becomes the stored model file."""

    COPY = "copy"
    TFLITE_TO_ONNX = "tflite-to-onnx"
    MESH_TOPOLOGY = "mesh-topology"


@dataclass(frozen=True)
class PackageArchive:
    """A pinned archive on the Python package index, fetched with pip so the user's index settings apply."""

    requirement: str
    filename: str
    sha256: str
    pip_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int | str, ...]
    """Fixed sizes as ints; a named (str) axis, such as "batch", may take any size."""
    dtype: str = "float32"
    """numpy name of the element type the model takes or gives."""
    optional: bool = False
    """An input some files of the model have and others lack (a DFM file's morph_value:0)."""


@dataclass(frozen=True)
class ModelIO:
    """How a neural model is called: its tensors, the face alignment it expects and its pixel normalisation."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    template: str | None = None
    """Alignment template name (see slimfuse.faces.align), for models that take aligned faces."""
    crop_size: int | None = None
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    """Input = (RGB/255 - mean) / std."""
    companions: tuple[str, ...] = ()
    """Other catalog models this one needs (an embedding converter, a recognizer)."""
    output_range: tuple[float, float] = (0.0, 1.0)
    """The values of the image output that stand for black and white: RGB/255 = (y - low) / (high - low)."""


LANDMARK_ERROR = "landmark_error_px"
"""Mean distance in pixels at the model's crop size between the variant's and the original's landmarks."""
BOX_IOU = "box_iou"
"""Mean over the original's detections of the best IoU with a variant's detection (a missed face counts 0)."""
COSINE = "cosine_similarity"
"""Mean cosine similarity of the variant's and the original's output vectors."""
PSNR = "psnr_db"
"""Mean PSNR in dB of the variant's generated image against the original's (SSIM and identity distance beside)."""
PIXEL_AGREEMENT = "pixel_agreement"
"""Share of the pixels whose most likely class is the same for the variant as for the original (face parsers)."""
METRICS: dict[str, bool] = {LANDMARK_ERROR: False, BOX_IOU: True, COSINE: True, PSNR: True, PIXEL_AGREEMENT: True}
"""Each quality-gate metric and whether higher is better."""


@dataclass(frozen=True)
class GateSpec:
    """The quality gate a reduced-precision or quantised variant of a model must pass against the original."""

    metric: str
    threshold: float
    higher_is_better: bool

    def passes(self, value: float) -> bool:
        """False for NaN: a variant whose metric cannot be measured does not pass."""
        return value >= self.threshold if self.higher_is_better else value <= self.threshold


def gate(metric: str, threshold: float) -> GateSpec:
    return GateSpec(metric, threshold, METRICS[metric])


KIND_GATES: dict[str, GateSpec] = {
    "landmarker": gate(LANDMARK_ERROR, 0.5),
    "detector": gate(BOX_IOU, 0.9),
    "recognizer": gate(COSINE, 0.99),
    "embedding_converter": gate(COSINE, 0.99),
    "swapper": gate(PSNR, 35.0),
    "enhancer": gate(PSNR, 35.0),
    "frame_enhancer": gate(PSNR, 35.0),
    "occluder": gate(PSNR, 35.0),
    "parser": gate(PIXEL_AGREEMENT, 0.98),
}
"""The gate of each kind of ONNX model, unless its catalog entry sets its own."""


@dataclass(frozen=True)
class Published:
    """What public sources state about the publisher's own file (its release asset), so a download of a model that
    is otherwise trust-on-first-use is checked before it is kept."""

    sha256: str
    size: int


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str
    licence: str
    filename: str
    sha256: str | None
    """None: not pinned; recorded on first fetch or use and verified after (trust on first use)."""
    size: int | None
    description: str
    source_name: str
    """File name of the fetched original (before conversion)."""
    source_sha256: str | None
    archive: PackageArchive | None = None
    member: str | None = None
    """Path of the original inside the archive."""
    urls: tuple[str, ...] = field(default=())
    """HTTPS addresses of the original, tried before the package index."""
    conversion: Conversion = Conversion.COPY
    io: ModelIO | None = None
    """For neural models: how to call them."""
    gate: GateSpec | None = None
    """The quality gate of this model's optimised variants (None: it has none; not an ONNX model)."""
    published: Published | None = None
    """For a trust-on-first-use model: the sha256 and size public sources state for the file at `urls` (a download
    must match; a file the user places may differ, and is then trusted on first use with a notice)."""
    placed: Path | None = None
    """A file the user gives by path: used where it is (trust on first use), never fetched."""
    publisher_crc32: bool = False
    """The publisher puts NAME.hash beside each address in `urls`: the file's CRC32 as 8 lowercase hex digits
    (FaceFusion does). A download with no `published` sha256 is checked against it before it is trusted."""

    def aligned_face_io(self, kind: str, noun: str) -> tuple[ModelIO, str, int]:
        """Its tensors, alignment template and crop size, for a model of `kind` that takes aligned faces;
        ValueError "NAME is not NOUN" for any other."""
        io = self.io
        if self.kind != kind or io is None or io.template is None or io.crop_size is None:
            raise ValueError(f"{self.name} is not {noun}")
        return io, io.template, io.crop_size

    @property
    def known_size(self) -> int | None:
        """The file's size in bytes where the catalog knows it (its own size, or the published one)."""
        return self.size if self.size is not None else (self.published.size if self.published else None)

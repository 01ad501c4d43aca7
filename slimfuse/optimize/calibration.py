"""Real faces for calibrating and gating model variants: the packaged photos, augmented; and the activation
ranges static quantisation calibrates on them.

Two disjoint sets of augmentations (scale, roll, brightness, blur, mirror) of the public-domain portraits that
ship in matplotlib and scikit-image: `gate` for the quality gate and `calibrate` for static quantisation, so a
quantised variant is not judged on the very pictures it was calibrated on. Each image's face (box, keypoints,
468-point mesh) comes from the embedded original models (BlazeFace and FaceMesh), never from a variant.

`activation_ranges` computes the min / max ranges onnxruntime's MinMax calibrator computes, in the memory of one
plain run of the model: ONNX Runtime's own calibrator keeps every activation of a run alive at once (about 8 GB
for gfpgan_1.4 at 512 px, where a plain run needs about 1 GB).
"""
from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import cv2
import numpy as np
from PIL import Image

from slimfuse.faces.types import Face
from slimfuse.models.runtime import QUIET_LOG_SEVERITY
from slimfuse.samples import ASTRONAUT_FACE, GRACE_HOPPER_FACE, sample_path

if TYPE_CHECKING:
    import onnx
    from onnxruntime.quantization import TensorsData

Split = Literal["gate", "calibrate"]
PHOTOS: dict[str, tuple[int, int, int, int]] = {"grace_hopper": GRACE_HOPPER_FACE, "astronaut": ASTRONAUT_FACE}


@dataclass(frozen=True)
class Augment:
    scale: float = 1.0
    """Zoom about the face centre (below 1 the face gets smaller)."""
    roll: float = 0.0
    """Degrees, counter-clockwise, about the face centre."""
    brightness: float = 1.0
    blur: float = 0.0
    """Gaussian sigma in pixels."""
    mirror: bool = False

    @property
    def label(self) -> str:
        parts = [f"scale {self.scale:g}" if self.scale != 1 else "", f"roll {self.roll:g}" if self.roll else "",
                 f"brightness {self.brightness:g}" if self.brightness != 1 else "",
                 f"blur {self.blur:g}" if self.blur else "", "mirror" if self.mirror else ""]
        return ", ".join(part for part in parts if part) or "as is"


AUGMENTS: dict[Split, tuple[Augment, ...]] = {
    "gate": (
        Augment(), Augment(scale=0.6), Augment(scale=1.5), Augment(roll=-25), Augment(roll=25),
        Augment(brightness=0.6), Augment(brightness=1.4), Augment(blur=2.0),
        Augment(scale=0.8, roll=15, brightness=0.8, blur=1.0),
    ),
    "calibrate": (
        Augment(mirror=True), Augment(scale=0.75, roll=-10), Augment(scale=1.25, roll=10),
        Augment(brightness=0.8, blur=1.0), Augment(brightness=1.2, mirror=True), Augment(scale=1.1, roll=20),
        Augment(scale=0.9, blur=1.5), Augment(scale=0.7, roll=-20, brightness=1.1),
    ),
}


@dataclass(frozen=True)
class CalibrationImage:
    label: str
    image: np.ndarray
    """RGB uint8."""
    face: Face | None
    """The largest face with its mesh, by the original models; None when they found none."""


def augment(image: np.ndarray, centre: tuple[float, float], change: Augment) -> np.ndarray:
    """`image` zoomed and rolled about `centre`, brightened, blurred and mirrored; same size, border replicated."""
    height, width = image.shape[:2]
    out = image
    if change.scale != 1.0 or change.roll:
        matrix = cv2.getRotationMatrix2D(centre, change.roll, change.scale)
        out = cv2.warpAffine(out, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    if change.brightness != 1.0:
        out = np.clip(out.astype(np.float32) * np.float32(change.brightness), 0, 255).astype(np.uint8)
    if change.blur:
        out = cv2.GaussianBlur(out, (0, 0), change.blur)
    if change.mirror:
        out = out[:, ::-1]
    return np.ascontiguousarray(out)


def photos() -> dict[str, np.ndarray]:
    return {name: np.asarray(Image.open(sample_path(name)).convert("RGB")) for name in PHOTOS}


def images(split: Split) -> list[tuple[str, np.ndarray]]:
    """The augmented photos of `split`, labelled."""
    found = []
    for name, photo in photos().items():
        box = PHOTOS[name]
        centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        for change in AUGMENTS[split]:
            found.append((f"{name} ({change.label})", augment(photo, centre, change)))
    return found


def calibration_images(analyse: object, split: Split) -> list[CalibrationImage]:
    """The augmented photos of `split` with their largest face, found by `analyse` (a FaceAnalyser over the
    original models)."""
    result = []
    for label, image in images(split):
        faces = analyse.faces(image)  # type: ignore[attr-defined]
        result.append(CalibrationImage(label, image, faces[0] if faces else None))
    return result


# Activation ranges --------------------------------------------------------------------------------------------

FLOAT_TYPES = frozenset({1, 10})
"""onnx.TensorProto.FLOAT and FLOAT16: the element types onnxruntime calibrates."""


def activation_ranges(source: Path, feeds: Sequence[Mapping[str, np.ndarray]]) -> TensorsData:
    """The lowest and highest value of every tensor onnxruntime's static quantiser calibrates (`quantize_static`
    with MinMax: the same tensors, the same float32 arrays of shape (1,)), over `feeds`.

    One run per feed of the model with a ReduceMin and a ReduceMax right after each of those tensors' producers,
    executed in graph order, so each activation is reduced before anything else runs and freed as in a plain run;
    each run's minima and maxima are folded into running ones at once, so nothing grows with the number of feeds.
    The session maps the weights from a temporary file instead of holding copies of them."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization.calibrate import CalibrationMethod, TensorsData
    from onnxruntime.quantization.quant_utils import load_model_with_shape_infer

    if not feeds:
        raise ValueError("static quantisation needs calibration inputs")
    model = load_model_with_shape_infer(source)  # as onnxruntime's calibrator loads it: the same value_info
    tensors = calibrated_tensors(model)
    reductions = add_reductions(model, tensors)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the values of the graph as written
    # The default order runs the added reductions after the model's own nodes, which keeps every activation alive
    # (what makes onnxruntime's calibrator peak); priority order follows the graph's node order among ready nodes.
    options.execution_order = ort.ExecutionOrder.PRIORITY_BASED
    options.enable_mem_pattern = False  # its one block for a whole run's plan added about 500 MB on gfpgan_1.4
    options.log_severity_level = QUIET_LOG_SEVERITY
    lowest: dict[str, np.ndarray] = {}
    highest: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory(prefix="slimfuse-calibration-") as work:
        path = Path(work) / "calibration.onnx"
        # The weights in a file of their own, which onnxruntime maps rather than copies: creating the session from
        # the model's bytes held them three times over (about 1.7 GB for inswapper_128's 554 MB).
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="weights")
        del model
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        for feed in feeds:
            values = session.run(reductions, dict(feed))
            for index, name in enumerate(tensors):
                low, high = values[2 * index].reshape(-1), values[2 * index + 1].reshape(-1)
                # fmin / fmax skip NaN as onnxruntime's nanmin / nanmax over the runs do
                lowest[name] = np.fmin(lowest[name], low) if name in lowest else low
                highest[name] = np.fmax(highest[name], high) if name in highest else high
        del session  # before its weights file goes
    return TensorsData(CalibrationMethod.MinMax, {name: (lowest[name], highest[name]) for name in tensors})


def calibrated_tensors(model: onnx.ModelProto) -> list[str]:
    """The tensors onnxruntime's calibrator takes the range of, in graph order: as
    `CalibraterBase.select_tensors_to_calibrate` picks them for `quantize_static` (which calibrates the op types it
    quantises), the float inputs and outputs of those nodes that are not initializers and whose type is known."""
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    op_types = set(QLinearOpsRegistry) | set(QDQRegistry)
    types = element_types(model)
    constants = {init.name for init in model.graph.initializer}
    found: dict[str, None] = {}  # ordered, without repeats
    for node in model.graph.node:
        if node.op_type in op_types:
            found.update((name, None) for name in (*node.input, *node.output)
                         if types.get(name) in FLOAT_TYPES and name not in constants)
    return list(found)


def element_types(model: onnx.ModelProto) -> dict[str, int]:
    """The element type of every tensor whose type the graph states (value_info, outputs, inputs: the later wins)."""
    graph = model.graph
    return {value.name: value.type.tensor_type.elem_type for value in (*graph.value_info, *graph.output, *graph.input)
            if value.type.HasField("tensor_type")}


def add_reductions(model: onnx.ModelProto, tensors: Sequence[str]) -> list[str]:
    """Add to `model` a ReduceMin and a ReduceMax of each of `tensors` (over all axes, kept dims) right after the
    node that makes it (graph inputs: first), as graph outputs; returns their names, min and max of each in turn."""
    from onnx import helper

    graph = model.graph
    types = element_types(model)
    outputs = {name: (f"{name}__calibration_min", f"{name}__calibration_max") for name in tensors}

    def reduce(made: Sequence[str]) -> list[onnx.NodeProto]:
        return [helper.make_node(op, [name], [output], name=output) for name in made if name in outputs
                for op, output in zip(("ReduceMin", "ReduceMax"), outputs[name], strict=True)]

    nodes = reduce([value.name for value in graph.input])
    for node in graph.node:
        nodes.append(node)
        nodes.extend(reduce(node.output))
    del graph.node[:]
    graph.node.extend(nodes)
    graph.output.extend(helper.make_tensor_value_info(output, types[name], None)
                        for name in tensors for output in outputs[name])
    return [output for name in tensors for output in outputs[name]]

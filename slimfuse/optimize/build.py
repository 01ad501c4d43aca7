"""Make, gate and store a model variant: what `slimfuse optimize` does, as a library.

MODEL is a catalog name (the variant is stored beside the original in the store, as NAME.VARIANT) or the path of
an .onnx file (the variant goes beside it; the file's kind is the catalog entry with the same sha256, or the
metric given). A variant that fails its gate is not stored unless forced, and is then marked failed; a variant
made without the gate is stored "ungated" and gated when a run first selects it (`ensure_gated`).
"""
from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import onnx

from slimfuse.errors import InputMissingError, ModelInvalidError, OptimizeError, SlimfuseError, UsageError
from slimfuse.models.pool import ModelPool
from slimfuse.models.runtime import SessionSettings
from slimfuse.models.spec import KIND_GATES, METRICS, GateSpec, ModelSpec
from slimfuse.models.store import Notify, Store, sha256_file
from slimfuse.models.validate import file_inputs
from slimfuse.models.variants import (FAIL, UNGATED, VARIANTS, VariantRecord, now, read_record, split_name,
                                      variant_filename)
from slimfuse.optimize.calibration import Split, calibration_images
from slimfuse.optimize.gate import GATE_SESSIONS, GateResult, evaluate
from slimfuse.optimize.quantize import OrtLevel, make_quantised
from slimfuse.optimize.subjects import Subject, SubjectContext, build_subject

TECHNIQUES = VARIANTS


@dataclass(frozen=True)
class OptimizeRequest:
    technique: str
    """One of TECHNIQUES: fp16, int8 (static), int8-dynamic, optimized."""
    gate: bool = False
    keep_fp32: tuple[str, ...] = ()
    force: bool = False
    metric: str | None = None
    """The gate metric of a file the catalog does not know (or of a catalog model without a gate)."""
    threshold: float | None = None
    """Overrides the gate's threshold."""
    ort_level: OrtLevel = "basic"

    def __post_init__(self) -> None:
        if self.technique not in TECHNIQUES:
            raise ValueError(f"unknown technique {self.technique!r}")
        if self.metric is not None and self.metric not in METRICS:
            raise UsageError(detail=f"unknown metric {self.metric}; known: {', '.join(METRICS)}")


@dataclass(frozen=True)
class OptimizeTarget:
    """The model being optimised."""

    name: str
    """Catalog name, or the file's stem for a file the catalog does not know."""
    spec: ModelSpec | None
    path: Path
    sha256: str
    in_store: bool
    gate: GateSpec | None

    def destination(self, store: Store, technique: str) -> Path:
        if self.in_store:
            return store.variant_location(f"{self.name}.{technique}")
        return self.path.with_name(variant_filename(self.path.name, technique))


@dataclass(frozen=True)
class Outcome:
    model: OptimizeTarget
    technique: str
    path: Path
    """Where the variant is stored (or would have been, when it was not stored)."""
    stored: bool
    record: VariantRecord
    gate: GateResult | None
    original_size: int
    variant_size: int


@dataclass
class Workshop:
    """One optimisation's shared state: the store, a pool of original models, the calibration faces per split."""

    store: Store
    notify: Notify = lambda message: None
    _contexts: dict[str, SubjectContext] = field(default_factory=dict)
    _pool: ModelPool | None = None

    @property
    def pool(self) -> ModelPool:
        if self._pool is None:
            self._pool = ModelPool(self.store, SessionSettings(), notify=self.notify)
        return self._pool

    def context(self, split: Split) -> SubjectContext:
        if split not in self._contexts:
            from slimfuse.faces.analyse import FaceAnalyser

            images = calibration_images(FaceAnalyser(self.pool), split)
            if sum(item.face is not None for item in images) < 4:
                raise OptimizeError(detail="the original models found too few faces in the calibration photos")
            self._contexts[split] = SubjectContext(images, self.pool)
        return self._contexts[split]

    def subject(self, model: OptimizeTarget, metric: str, split: Split) -> Subject:
        inputs = file_inputs(model.path)
        first = inputs[0] if inputs else None
        return build_subject(model.spec, self.context(split), metric, first.name if first else "",
                             first.shape if first else ())


def resolve(store: Store, model: str, request: OptimizeRequest) -> OptimizeTarget:
    """The catalog model or file `model` names, with its gate (the catalog's, or from --metric / --threshold)."""
    spec: ModelSpec | None
    if model in store.catalog.names():
        spec = store.catalog.get(model)
        if not spec.filename.endswith(".onnx"):
            raise UsageError(detail=f"{model} is not an ONNX model ({spec.filename}); only ONNX models have variants")
        path = store.path(model)
        name, in_store = model, True
        digest = spec.sha256 or store.recorded(model) or sha256_file(path)
    else:
        path = Path(model)
        if not path.is_file():
            if "/" not in model and not model.endswith(".onnx"):
                raise UsageError(detail=f"unknown model {model}; give a catalog name ({', '.join(_onnx_names(store))}) "
                                 "or the path of an .onnx file")
            raise InputMissingError(path)
        digest = sha256_file(path)
        spec = _spec_with_sha256(store, digest)
        name, in_store = (spec.name if spec else path.stem), False
        try:
            file_inputs(path)
        except Exception as exc:  # noqa: BLE001 - onnx raises several types for a file that is not a model
            raise ModelInvalidError(path, f"not an ONNX model onnx can read ({exc})") from exc
    return OptimizeTarget(name=name, spec=spec, path=path, sha256=digest, in_store=in_store,
                       gate=_gate_of(spec, request, path))


def optimize(store: Store, model: str, request: OptimizeRequest, notify: Notify = lambda message: None,
             workshop: Workshop | None = None, runtime: SessionSettings = GATE_SESSIONS) -> Outcome:
    """Make the `request.technique` variant of `model`, gate it when asked (the original and the variant running
    with `runtime`: the CPU by default), and store it unless it failed."""
    shop = workshop or Workshop(store, notify)
    target = resolve(store, model, request)
    if request.gate and target.gate is None:
        raise UsageError(detail=f"{target.name}: no quality gate is known for this model; give --metric")
    data, technique = make_variant(shop, target, request)
    destination = target.destination(store, request.technique)
    result = None
    if request.gate:
        assert target.gate is not None
        result = gate_bytes(shop, target, request.technique, data, target.gate, runtime)
    verdict = UNGATED if result is None else result.verdict
    record = VariantRecord(model=target.name, variant=request.technique, sha256=_sha256_bytes(data),
                           original_sha256=target.sha256, size=len(data), verdict=verdict, technique=technique,
                           gate=None if result is None else result.to_dict(), created=now())
    stored = verdict != FAIL or request.force
    if stored:
        store.put_variant(destination, data, record)
    return Outcome(model=target, technique=request.technique, path=destination, stored=stored, record=record,
                   gate=result, original_size=target.path.stat().st_size, variant_size=len(data))


def make_variant(shop: Workshop, target: OptimizeTarget, request: OptimizeRequest) -> tuple[bytes, dict[str, Any]]:
    """The variant's bytes and how it was made."""
    from slimfuse.optimize.fp16 import Float16Error, convert_float16, tensor_ranges

    try:
        if request.technique == "fp16":
            model = onnx.load(str(target.path))
            ranges = None
            if target.gate is not None:  # where the model's values outgrow float16 on real faces
                feeds = shop.subject(target, target.gate.metric, "calibrate").feeds()
                ranges = tensor_ranges(model, feeds)
            converted, report = convert_float16(model, keep=request.keep_fp32, ranges=ranges)
            how = {"technique": "fp16", "keep_fp32": list(request.keep_fp32),
                   "range_checked": ranges is not None, **report.to_dict()}
            return converted.SerializeToString(deterministic=True), how
        feeds = None
        if request.technique == "int8":
            if target.gate is None:
                raise UsageError(detail=f"{target.name}: static int8 calibrates on face crops, which needs the "
                                 "model's kind: give --metric (or use --dynamic)")
            feeds = shop.subject(target, target.gate.metric, "calibrate").feeds()
        return make_quantised(target.path, request.technique, feeds, request.ort_level)
    except SlimfuseError:
        raise
    except (Float16Error, ValueError, RuntimeError, onnx.checker.ValidationError) as exc:
        raise OptimizeError(target.path, f"{request.technique}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - onnxruntime's tools raise many types
        raise OptimizeError(target.path, f"{request.technique}: {type(exc).__name__}: {exc}") from exc


def gate_bytes(shop: Workshop, target: OptimizeTarget, technique: str, data: bytes, gate: GateSpec,
               runtime: SessionSettings = GATE_SESSIONS) -> GateResult:
    """Gate a variant held in memory against the original (both run with `runtime`: the CPU by default)."""
    subject = shop.subject(target, gate.metric, "gate")
    with tempfile.TemporaryDirectory(prefix="slimfuse-gate-") as work:
        candidate = Path(work) / f"candidate.{technique}.onnx"
        candidate.write_bytes(data)
        return gate_file(target, technique, candidate, gate, subject, runtime)


def gate_file(target: OptimizeTarget, technique: str, candidate: Path, gate: GateSpec, subject: Subject,
              runtime: SessionSettings = GATE_SESSIONS) -> GateResult:
    try:
        return evaluate(target.name, technique, gate, subject, target.path, candidate, runtime)
    except SlimfuseError:
        raise
    except Exception as exc:  # noqa: BLE001 - a variant ONNX Runtime cannot run fails its gate loudly
        raise OptimizeError(candidate, f"the {technique} variant of {target.name} does not run: {exc}") from exc


def ensure_gated(store: Store, name: str, notify: Notify = lambda message: None,
                 workshop: Workshop | None = None) -> VariantRecord | None:
    """Gate stored variant `name` (NAME.VARIANT) now if it was stored without its gate, recording the verdict in its
    sidecar; returns the sidecar (None when there is none: the store refuses such a variant when it is loaded)."""
    base, variant = split_name(name, store.catalog.names())
    path = store.variant_location(name)
    record = read_record(path)
    if variant is None or record is None or record.verdict != UNGATED or not path.is_file():
        return record
    spec = store.catalog.get(base)
    if spec.gate is None:
        return record
    if sha256_file(path) != record.sha256:
        return record  # the store refuses it, naming the mismatch
    notify(f"{name}: gating the variant against {base} before its first use")
    shop = workshop or Workshop(store, notify)
    target = resolve(store, base, OptimizeRequest(technique=variant))
    result = gate_file(target, variant, path, spec.gate, shop.subject(target, spec.gate.metric, "gate"))
    updated = replace(record, verdict=result.verdict, gate=result.to_dict())
    store.put_variant(path, None, updated)
    notify(f"{result.summary()}")
    return updated


def _gate_of(spec: ModelSpec | None, request: OptimizeRequest, path: Path) -> GateSpec | None:
    if spec is not None and spec.gate is not None:
        if request.metric is not None and request.metric != spec.gate.metric:
            raise UsageError(detail=f"{spec.name}'s gate metric is {spec.gate.metric} (from the catalog); --metric is "
                             "for files the catalog does not know")
        gate: GateSpec | None = spec.gate
    elif request.metric is not None:
        default = next((g for g in KIND_GATES.values() if g.metric == request.metric), None)
        gate = GateSpec(request.metric, default.threshold if default else 0.0, METRICS[request.metric])
    else:
        gate = None
    if gate is not None and request.threshold is not None:
        gate = replace(gate, threshold=float(request.threshold))
    return gate


def _spec_with_sha256(store: Store, digest: str) -> ModelSpec | None:
    for spec in store.catalog.models:
        if spec.sha256 == digest or (spec.sha256 is None and store.recorded(spec.name) == digest):
            return spec
    return None


def _onnx_names(store: Store) -> list[str]:
    return [spec.name for spec in store.catalog.models if spec.filename.endswith(".onnx")]


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


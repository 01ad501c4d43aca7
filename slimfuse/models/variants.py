"""Named variants of catalog models: optimised copies stored beside the original (`slimfuse optimize`).

Variant `NAME.VARIANT` of model NAME (e.g. `face_landmark.fp16`) is the file `STEM.VARIANT.onnx` beside the
original's `STEM.onnx`, with a small JSON sidecar `STEM.VARIANT.json`: the variant file's sha256, the sha256 of
the original it was made from, how it was made, and its quality-gate result. A variant is loaded only when its
file matches the recorded sha256 (checked before its first load in a process), when it was made from the original
the store holds now, and when it passed its gate.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VARIANTS: tuple[str, ...] = ("fp16", "int8", "int8-dynamic", "optimized")
"""fp16: float16 weights and compute; int8: static QDQ quantisation calibrated on face crops; int8-dynamic:
dynamic quantisation; optimized: ONNX Runtime's offline-optimised graph."""

FLAGS: dict[str, str] = {"fp16": "--fp16", "int8": "--int8", "int8-dynamic": "--int8 --dynamic",
                         "optimized": "--ort-optimize"}
"""The `slimfuse optimize` options that make each variant."""

PASS, FAIL, UNGATED = "pass", "fail", "ungated"


def split_name(name: str, names: Iterable[str]) -> tuple[str, str | None]:
    """("face_landmark", "fp16") for "face_landmark.fp16", (name, None) for a catalog name; KeyError otherwise.
    Catalog names may hold dots themselves (gfpgan_1.4), so the variant is what follows the last one."""
    known = set(names)
    if name in known:
        return name, None
    base, dot, variant = name.rpartition(".")
    if dot and base in known and variant in VARIANTS:
        return base, variant
    raise KeyError(name)


def variant_filename(filename: str, variant: str) -> str:
    """"face_landmark.onnx" -> "face_landmark.fp16.onnx"."""
    stem, dot, suffix = filename.rpartition(".")
    return f"{stem}.{variant}.{suffix}" if dot else f"{filename}.{variant}"


def sidecar_path(path: Path) -> Path:
    """The JSON sidecar of a variant file: STEM.VARIANT.json beside STEM.VARIANT.onnx."""
    return path.with_suffix(".json")


@dataclass(frozen=True)
class VariantRecord:
    """What a variant's sidecar holds."""

    model: str
    variant: str
    sha256: str
    """Of the variant file."""
    original_sha256: str
    size: int
    verdict: str
    """"pass", "fail" (stored only with --force) or "ungated"."""
    technique: dict[str, Any] = field(default_factory=dict)
    gate: dict[str, Any] | None = None
    """The gate result (GateResult.to_dict()), None until gated."""
    created: str = ""

    @property
    def name(self) -> str:
        return f"{self.model}.{self.variant}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> VariantRecord:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return cls(model=str(data["model"]), variant=str(data["variant"]), sha256=str(data["sha256"]),
                   original_sha256=str(data["original_sha256"]), size=int(data["size"]), verdict=str(data["verdict"]),
                   technique=dict(data.get("technique") or {}), gate=data.get("gate"),
                   created=str(data.get("created", "")))


def read_record(path: Path) -> VariantRecord | None:
    """The sidecar of variant file `path`; None when it is missing or unreadable."""
    try:
        return VariantRecord.from_json(sidecar_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def variant_problem(record: VariantRecord | None, digest: str, original_sha256: str | None) -> str | None:
    """Why a variant file with sha256 `digest` must not be loaded, or None. The caller names the file."""
    if record is None:
        return "its sidecar (.json, with the sha256 and gate result) is missing or unreadable"
    if digest != record.sha256:
        return (f"expected the sha256 recorded when it was made, {record.sha256}, found {digest} "
                "(a changed or damaged file)")
    if original_sha256 is not None and original_sha256 != record.original_sha256:
        return (f"it was made from another {record.model} file (sha256 {record.original_sha256}) than the one the "
                f"store holds ({original_sha256}); make it again with slimfuse optimize")
    return None


def verdict_words(record: VariantRecord) -> str:
    """Why a variant that did not pass is not used: 'has not been gated', or its failed gate."""
    if record.gate is None:
        return "has not been gated"
    return (f"failed its quality gate ({record.gate.get('metric')} {record.gate.get('value')}, "
            f"threshold {record.gate.get('threshold')}; stored with --force)")

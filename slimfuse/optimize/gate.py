"""The quality gate: a variant is used only when it stays close enough to the original on real faces.

Original and variant run on the same calibration inputs (the packaged photos, augmented: see
slimfuse.optimize.calibration) and are compared with the metric of the model's kind (slimfuse.optimize.subjects);
the catalog entry's `gate` holds the metric, its threshold and which way is better. The verdict follows from
the measured value and the threshold alone; a value that cannot be measured (NaN) fails.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from slimfuse.models.runtime import SessionSettings, create_session
from slimfuse.models.spec import GateSpec
from slimfuse.models.variants import FAIL, PASS
from slimfuse.optimize.subjects import Subject


@dataclass(frozen=True)
class GateResult:
    model: str
    variant: str
    metric: str
    value: float
    threshold: float
    higher_is_better: bool
    details: Mapping[str, float | int | str] = field(default_factory=lambda: MappingProxyType({}))
    """Per-metric details: sample count, worst case, the other metrics of the kind (recall, SSIM, identity ...)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def spec(self) -> GateSpec:
        return GateSpec(self.metric, self.threshold, self.higher_is_better)

    @property
    def passed(self) -> bool:
        return self.spec.passes(self.value)

    @property
    def verdict(self) -> str:
        return PASS if self.passed else FAIL

    def to_dict(self) -> dict[str, Any]:
        """The `--json` document (NaN written as null)."""
        return {
            "model": self.model, "variant": self.variant, "metric": self.metric, "value": _json_number(self.value),
            "threshold": self.threshold, "higher_is_better": self.higher_is_better, "verdict": self.verdict,
            "details": {key: _json_number(value) for key, value in self.details.items()},
        }

    def summary(self) -> str:
        relation = ">=" if self.higher_is_better else "<="
        return (f"{self.model}.{self.variant}: {self.metric} {self.value:.4g} (must be {relation} {self.threshold:g}): "
                f"{self.verdict}")


GATE_SESSIONS = SessionSettings(enable_cpu_arena=False, enable_mem_pattern=False)
"""The gate runs two sessions side by side on a few faces: without ONNX Runtime's CPU arena and memory patterns
neither keeps its largest activations' memory between runs (gfpgan_1.4's gate otherwise took the whole command of
making its int8 variant over 2 GB)."""


def evaluate(model: str, variant: str, gate: GateSpec, subject: Subject, original: Path, candidate: Path,
             runtime: SessionSettings = GATE_SESSIONS) -> GateResult:
    """Run the original and the candidate variant on the subject's inputs and judge the variant."""
    if subject.metric != gate.metric:
        raise ValueError(f"the subject measures {subject.metric}, the gate wants {gate.metric}")
    reference = create_session(original, runtime)
    trial = create_session(candidate, runtime)
    value, details = subject.measure(reference, trial)
    return GateResult(model=model, variant=variant, metric=gate.metric, value=float(value), threshold=gate.threshold,
                      higher_is_better=gate.higher_is_better, details=details)


def _json_number(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value

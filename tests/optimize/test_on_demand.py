"""Level 3's variants: planning lists the models that lack one (and makes nothing), `slimfuse swap` makes them in
the order the techniques are tried in."""
from __future__ import annotations

from pathlib import Path

import pytest

import neural_models as nm
from slimfuse.bench import standins
from slimfuse.models.store import Store
from slimfuse.models.variants import FAIL, VariantRecord, variant_filename
from slimfuse.optimize import on_demand
from slimfuse.pipeline import plan

TECHNIQUES = ("int8", "int8-dynamic")


def test_large_models_without_a_tried_variant_are_made_static_then_dynamic(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    user = nm.isolated_store(tmp_path / "user", store)
    for name in ("inswapper_128", "gfpgan_1.4"):
        standins.build(name, user.location(name), 1 / 16)
    monkeypatch.setattr(plan, "MIN_VARIANT_BYTES", 0)
    spec = user.catalog.get("gfpgan_1.4")  # tried before (failed its gate, stored marked failed): not again
    record = VariantRecord(model="gfpgan_1.4", variant="int8", sha256="0", original_sha256="0", size=1, verdict=FAIL)
    variant = user.model_dir / variant_filename(spec.filename, "int8")
    variant.with_suffix(".json").write_text(record.to_json())
    models = ["inswapper_128", "gfpgan_1.4", "real_esrgan_x2"]  # no file for the last
    assert plan.untried(user, models, TECHNIQUES) == ["inswapper_128"]

    calls: list[tuple[str, str]] = []
    verdicts = {"int8": "fail: psnr 30", "int8-dynamic": "pass: psnr 41"}

    def optimize(store: Store, name: str, technique: str) -> str:
        calls.append((name, technique))
        return verdicts[technique]

    monkeypatch.setattr(on_demand, "_optimize", optimize)
    notes: list[str] = []
    on_demand.make_variants(user, plan.untried(user, models, TECHNIQUES), TECHNIQUES, notes.append)
    assert calls == [("inswapper_128", "int8"), ("inswapper_128", "int8-dynamic")]
    assert any("once" in note for note in notes) and notes[-1].startswith("inswapper_128.int8-dynamic: pass")

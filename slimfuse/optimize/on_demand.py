"""The variants a run's plan found missing (VariantWork), made where the user asked for the work: `slimfuse swap`
before it starts, with a line for each.

`--video-memory-level 3` runs the stored variant of each model that passed its quality gate. Where a large model
has none yet (no variant was ever tried), it is made here, once: `slimfuse optimize NAME --int8 --gate` (static,
calibrated on face crops; dynamic where static fails its gate; `--fp16` on a GPU provider) in a child process, so
the run's own peak does not carry the quantiser's, with a line of progress before and after. A variant that fails
its gate is stored marked failed (`--force`), so later runs neither use it nor try again. A variant a model option
names that was stored without its gate is gated here too.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from slimfuse.models.store import Notify, Store
from slimfuse.models.variants import FLAGS


def make_variants(store: Store, models: Sequence[str], techniques: Sequence[str], notify: Notify) -> None:
    """Make, gate and store the first of `techniques` that passes for each of `models` (a plan's
    VariantWork.to_make)."""
    for name in models:
        for technique in techniques:
            started = time.perf_counter()
            notify(f"{name}: making its {technique} variant for this memory level, once "
                   f"(slimfuse optimize {name} {FLAGS[technique]} --gate; stored for later runs)")
            verdict = _optimize(store, name, technique)
            notify(f"{name}.{technique}: {verdict} ({time.perf_counter() - started:.0f} s)")
            if verdict.startswith("pass"):
                break


def _optimize(store: Store, name: str, technique: str) -> str:
    """One `slimfuse optimize` in a child process: 'pass: METRIC VALUE', 'fail: ...' or 'not made: REASON'."""
    with tempfile.TemporaryDirectory(prefix="slimfuse-variant-") as folder:
        result = Path(folder) / "gate.json"
        argv = [sys.executable, "-m", "slimfuse", "optimize", name, *FLAGS[technique].split(), "--gate", "--force",
                "--quiet", "--json", str(result)]
        if store.models_dir is not None:
            argv += ["--models-dir", str(store.models_dir)]
        done = subprocess.run(argv, env={**os.environ, "SLIMFUSE_HOME": str(store.home)}, capture_output=True,
                              text=True, check=False)
        try:
            gate = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            return f"not made: {lines[-1] if lines else f'exit {done.returncode}'}"
    return f"{gate.get('verdict')}: {gate.get('metric')} {gate.get('value')}"


def gate_variants(store: Store, names: Sequence[str], notify: Notify) -> None:
    """Gate each stored variant of `names` (NAME.VARIANT, a plan's VariantWork.to_gate) that waits for its gate;
    the store refuses one that fails when the pool loads it."""
    if not names:
        return
    from slimfuse.optimize.build import Workshop, ensure_gated

    shop = Workshop(store, notify)
    for name in names:
        ensure_gated(store, name, notify, shop)

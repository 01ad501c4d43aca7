"""The fp16 variants made and judged against their fp32 originals by the quality gate, both running on a GPU
provider, and stored with their verdict (so --video-memory-level 3 then loads the ones that passed): what
`slimfuse bench gpu` runs in a child process (`python -m slimfuse.bench.gpu_gate --provider cuda --json PATH NAME
...`, with SLIMFUSE_HOME set to the benchmark's private models home), so the benchmark's own process never holds a
CUDA context while it measures the others.

This is `slimfuse optimize NAME --fp16 --gate --force` with the gate's two sessions on the provider instead of
the CPU.
The sessions are strict: a provider that does not start is an error, not a quiet CPU run."""
from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from slimfuse.models.runtime import SessionSettings
from slimfuse.models.store import Store
from slimfuse.optimize.build import OptimizeRequest, Workshop, optimize

VARIANT = "fp16"


def gate_on(provider: str, names: Sequence[str], store: Store) -> list[dict[str, Any]]:
    """Each model's gate result on `provider` (the `--json` document of `slimfuse optimize`, and whether the variant
    was stored), or its error."""
    runtime = SessionSettings(providers=(provider,), strict_provider=True, enable_cpu_arena=False,
                              enable_mem_pattern=False)
    shop = Workshop(store)
    results = []
    for name in names:
        try:
            # force: one that fails is stored marked failed, so a level-3 run neither loads it nor makes its own
            outcome = optimize(store, name, OptimizeRequest(technique=VARIANT, gate=True, force=True),
                               workshop=shop, runtime=runtime)
            if outcome.gate is None:
                raise ValueError(f"{name} has no quality gate")
            results.append({**outcome.gate.to_dict(), "provider": provider, "stored": outcome.stored})
        except Exception as exc:  # noqa: BLE001 - the benchmark reports each model's failure and goes on
            first = str(exc).splitlines()[0] if str(exc) else ""
            results.append({"model": name, "variant": VARIANT, "provider": provider,
                            "error": f"{type(exc).__name__}: {first}"})
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m slimfuse.bench.gpu_gate")
    parser.add_argument("names", nargs="+", metavar="NAME")
    parser.add_argument("--provider", default="cuda")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    results = gate_on(args.provider, args.names, Store(notify=lambda message: None))
    args.json.write_text(json.dumps(results, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

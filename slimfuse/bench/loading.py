"""What loading a model costs, per way of loading it: `python -m slimfuse.bench.loading [--runs 5] [--json PATH]`.

Each of the real-size stand-ins (slimfuse.bench.standins, built into the store's cache once) is loaded by a fresh
process in each mode, and run on one random input a few times: the peak RSS while loading and what stays held
after it (both above the process's baseline), the peak while running, the load's seconds and the median CPU time
of a run (one thread; CPU time, not wall time, so other work on the machine moves it little).

Modes: `plain` is how ONNX Runtime loads a file by default (graph optimisation on); `prepared` loads the graph
optimised once for this CPU with optimisation and prepacking off (slimfuse.models.prepared, what the CPU runs use);
`prepared, no arena` adds what levels 2 and 3 set.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from slimfuse.bench import standins
from slimfuse.models.store import Store

MODES = ("plain", "prepared", "prepared, no arena")
CHILD = """
import json, sys, time
from pathlib import Path
import numpy as np
from slimfuse.models.prepared import PreparedModels
from slimfuse.models.runtime import SessionSettings, create_session

def status(key):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key)) / 1024

path, mode, cache, runs = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
options = SessionSettings(intra_op_threads=1, enable_cpu_arena="no arena" not in mode,
                         enable_mem_pattern="no arena" not in mode)
if mode != "plain":
    path, options = PreparedModels(cache).session_input(path.stem, path, options)
base = status("VmRSS")
started = time.perf_counter()
session = create_session(path, options)
load = time.perf_counter() - started
load_peak, held = status("VmHWM") - base, status("VmRSS") - base
rng = np.random.default_rng(0)
feeds = {i.name: rng.random([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
         for i in session.get_inputs()}
times = []
for _ in range(runs):
    cpu = time.process_time()
    session.run(None, feeds)
    times.append(time.process_time() - cpu)
print(json.dumps({"load_peak_mb": round(load_peak), "held_mb": round(held), "run_peak_mb": round(status("VmHWM") - base),
                  "load_s": round(load, 2), "run_cpu_ms": round(1000 * sorted(times)[len(times) // 2])}))
"""


def measure(path: Path, mode: str, cache: Path, runs: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), mode, str(cache), str(runs)], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m slimfuse.bench.loading", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    models = ("inswapper_128", "gfpgan_1.4", "arcface_w600k_r50")
    paths = standins.ensure(Store(notify=lambda message: None).home, models)
    rows = []
    with tempfile.TemporaryDirectory(prefix="slimfuse-bench-loading-") as cache:
        for name in models:
            for mode in MODES:  # "prepared" first makes the copy: measured after it, as later runs find it
                if mode == "prepared":
                    measure(paths[name], mode, Path(cache), 1)
                rows.append({"model": name, "file_mb": round(paths[name].stat().st_size / 2**20), "mode": mode,
                             **measure(paths[name], mode, Path(cache), args.runs)})
    print("| model | file MB | mode | load peak MB | held MB | run peak MB | load s | CPU ms per run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['model']} | {row['file_mb']} | {row['mode']} | {row['load_peak_mb']} | {row['held_mb']} | "
              f"{row['run_peak_mb']} | {row['load_s']} | {row['run_cpu_ms']} |")
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": args.runs, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

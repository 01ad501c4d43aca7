"""Records FaceFusion 3.8.1's outputs on fixed inputs and parity stand-ins into tests/parity/reference/.

Run from FaceFusion's venv (see tools/facefusion_reference/record.sh, which builds it):

    python tools/facefusion_reference/record.py --facefusion FF_CHECKOUT --target ASTRONAUT --source GRACE_HOPPER \
        [AREA ...]

AREA: one of AREAS (the default: every area). The stand-in files are built into a temporary folder; FaceFusion's model
lookup and inference pools are pointed at them (its download and hash checks do not run), every other step is
FaceFusion's own function.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

AREAS = ("swappers", "enhancers", "frame_enhancer", "detectors", "recognizer", "masks", "deep_swapper", "age_modifier",
         "frame_colorizer", "expression_restorer", "face_editor", "lip_syncer", "background_remover")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facefusion", type=Path, required=True, help="FaceFusion 3.8.1 checkout")
    parser.add_argument("--target", type=Path, required=True, help="the astronaut photo (python -m slimfuse.samples)")
    parser.add_argument("--source", type=Path, required=True, help="Grace Hopper's photo")
    parser.add_argument("areas", nargs="*", help=f"of {', '.join(AREAS)} (default: all)")
    args = parser.parse_args()
    unknown = sorted(set(args.areas) - set(AREAS))
    if unknown:
        parser.error(f"unknown area {', '.join(unknown)}; choose from {', '.join(AREAS)}")
    common.use_facefusion(args.facefusion.resolve())
    inputs = common.inputs(args.target, args.source)
    with tempfile.TemporaryDirectory(prefix="parity-models-") as folder:
        for area in args.areas or AREAS:
            module = importlib.import_module(f"record_{area}")
            for path in module.record(inputs, Path(folder)):
                print(f"{path.relative_to(common.REPO)}  {path.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()

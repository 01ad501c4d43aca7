"""The sample photos slimfuse's demo, tests and benchmarks use: public-domain portraits that ship inside
matplotlib and scikit-image (the `samples` extra)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from slimfuse.errors import InputMissingError, SlimfuseError, UsageError

SAMPLES: dict[str, tuple[str, tuple[str, ...]]] = {
    # 512x600, one face: US Navy portrait of Grace Hopper (public domain).
    "grace_hopper": ("matplotlib", ("mpl-data", "sample_data", "grace_hopper.jpg")),
    # 512x512, one face: NASA portrait of Eileen Collins (public domain).
    "astronaut": ("skimage", ("data", "astronaut.png")),
}

# Face boxes (x0, y0, x1, y1) in the sample photos, measured once and rounded outward.
GRACE_HOPPER_FACE = (165, 130, 370, 340)
ASTRONAUT_FACE = (175, 70, 278, 178)


def sample_path(name: str) -> Path:
    package, parts = SAMPLES[name]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise InputMissingError(name, f"sample photo needs the '{package}' package: pip install 'slimfuse[samples]'")
    path = Path(spec.origin).parent.joinpath(*parts)
    if not path.is_file():
        raise InputMissingError(path)
    return path


def main(argv: list[str]) -> int:
    """`python -m slimfuse.samples [NAME ...]`: the path of each named sample photo; every sample's name and path
    without a name."""
    unknown = [name for name in argv if name not in SAMPLES]
    if unknown:
        print(f"slimfuse: unknown sample {', '.join(unknown)}; known: {', '.join(SAMPLES)}", file=sys.stderr)
        return UsageError.exit_code
    try:
        if argv:
            print("\n".join(str(sample_path(name)) for name in argv))
        else:
            print("\n".join(f"{name}\t{sample_path(name)}" for name in SAMPLES))
    except SlimfuseError as exc:
        print(f"slimfuse: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

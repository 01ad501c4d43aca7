"""The sample photos slimfuse's demo, tests and benchmarks use: public-domain portraits that ship inside
matplotlib and scikit-image (the `samples` extra)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from slimfuse.errors import InputMissingError

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


if __name__ == "__main__":
    print(sample_path(sys.argv[1]))

"""Image comparison (PSNR) for the quality gate, the benchmarks and the tests."""
from __future__ import annotations

import numpy as np

# The PSNR of identical images, which is infinite, reported as this.
IDENTICAL_PSNR = 100.0


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB of two 8-bit images of one shape."""
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return IDENTICAL_PSNR if mse == 0 else min(IDENTICAL_PSNR, 10 * float(np.log10(255.0**2 / mse)))

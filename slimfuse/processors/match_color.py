"""Bringing a generated face crop's colours toward the crop it replaces, as far as their colour histograms agree
(FaceFusion's conditional colour match, used by its deep swapper).

The generated crop takes the original's colours at three coarse scales in turn (16 px, then about a third and two
thirds of the crop's side): at each, the difference of the two crops shrunk to that scale is enlarged back (bicubic)
and added. The result is blended with the generated crop by the correlation of the two crops' hue-saturation
histograms mapped from -1..1 to 0..1: crops of similar colouring take the match nearly in full, crops whose colours
differ (a person of another complexion, a strong light) keep more of their own.
"""
from __future__ import annotations

import cv2
import numpy as np

from slimfuse.processors.color import match_colours as carried_colours

SCALES = 3
HISTOGRAM_BINS = (50, 60)
"""Hue and saturation bins of the histograms compared."""


def match_colours(original: np.ndarray, generated: np.ndarray) -> np.ndarray:
    """`generated` (RGB uint8) with `original`'s colours, blended by their histograms' agreement (module doc)."""
    agreement = histogram_agreement(original, generated)
    matched = carried_colours(original, generated, SCALES)
    return cv2.addWeighted(generated, 1.0 - agreement, matched, agreement, 0)


def histogram_agreement(first: np.ndarray, second: np.ndarray) -> float:
    """The correlation of two RGB uint8 images' hue-saturation histograms, mapped from -1..1 to 0..1."""
    histograms = [cv2.calcHist([cv2.cvtColor(image, cv2.COLOR_RGB2HSV)], [0, 1], None, list(HISTOGRAM_BINS),
                               [0, 180, 0, 256]) for image in (first, second)]
    correlation = cv2.compareHist(histograms[0], histograms[1], cv2.HISTCMP_CORREL)
    return float(np.interp(correlation, (-1.0, 1.0), (0.0, 1.0)))

"""Makes the hand-checked masks of `slimfuse bench background` (slimfuse/bench/background_masks/NAME.png).

The outlines below were placed by hand on each photo (the group photos shrunk to 640 px wide, a third of their
size, by area averaging; the portraits at their own size), each looked at over the photo enlarged and moved until
no stretch of background or person lay on the wrong side of it by more than a few pixels. GrabCut then settles the
pixels within BAND of an outline only (inside it sure person, outside it sure background; HOLES sure background);
its result was looked at again the same way. What a person holds counts as the person.

    .venv/bin/python tools/background_masks/make_masks.py OUT_DIR

GrabCut's results may differ in a few edge pixels between OpenCV builds: the PNGs in the package are the masks the
figures were measured with; this script says how they were made.
"""
from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from slimfuse.bench.photo_set import DEVELOPMENT, fetch
from slimfuse.samples import sample_path

BAND = 6
"""Pixels each side of an outline that GrabCut decides."""
GROUP_SHRINK = 3
"""The group photos (1920 px wide) are outlined at a third of their size."""
OUTLINES: dict[str, list[list[tuple[int, int]]]] = {
    "grace_hopper": [
        [(15, 600), (15, 470), (30, 410), (60, 385), (120, 355), (185, 330), (200, 318), (195, 295), (170, 275),
         (158, 240), (155, 190), (150, 150), (155, 120), (175, 70), (200, 40), (245, 22), (300, 22), (335, 40),
         (360, 90), (372, 120), (368, 160), (365, 200), (360, 240), (350, 270), (335, 300), (330, 320), (380, 345),
         (440, 370), (490, 390), (512, 420), (512, 600)],
    ],
    "astronaut": [
        [(20, 512), (18, 420), (28, 330), (44, 266), (72, 232), (113, 200), (117, 175), (143, 152), (175, 140),
         (165, 118), (157, 100), (155, 60), (172, 30), (205, 18), (250, 18), (285, 35), (300, 60), (298, 100),
         (283, 125), (268, 138), (266, 162), (282, 182), (294, 202), (303, 222), (320, 250), (347, 287),
         (360, 343), (392, 345), (430, 345), (470, 368), (498, 410), (512, 450), (512, 512)],
    ],
    "sample1": [
        [(48, 427), (55, 385), (62, 345), (72, 318), (88, 290), (100, 255), (108, 228), (118, 205), (140, 195),
         (142, 180), (135, 160), (133, 130), (140, 105), (155, 88), (165, 75), (178, 70), (190, 78), (205, 75),
         (220, 85), (228, 100), (245, 112), (250, 122), (235, 128), (222, 135), (218, 160), (212, 185), (205, 192),
         (222, 200), (240, 210), (248, 200), (250, 170), (252, 145), (262, 124), (282, 106), (310, 108),
         (330, 120), (348, 145), (365, 170), (385, 185), (405, 180), (418, 168), (440, 160), (462, 148),
         (478, 125), (490, 95), (505, 72), (525, 62), (545, 68), (560, 85), (575, 110), (585, 140), (595, 180),
         (600, 220), (606, 260), (608, 290), (595, 300), (575, 300), (545, 310), (520, 320), (500, 330),
         (495, 360), (497, 400), (500, 427)],
    ],
    "sample2": [
        [(125, 455), (108, 430), (104, 400), (118, 372), (132, 345), (138, 318), (128, 290), (125, 250),
         (128, 215), (60, 218), (15, 215), (5, 205), (10, 190), (35, 165), (60, 140), (85, 118), (100, 105),
         (120, 105), (128, 90), (125, 70), (132, 45), (145, 20), (180, 12), (215, 25), (235, 50), (250, 85),
         (258, 115), (262, 140), (268, 155), (276, 140), (280, 110), (282, 70), (292, 40), (320, 25), (352, 35),
         (372, 60), (385, 95), (395, 100), (420, 70), (450, 45), (470, 25), (500, 12), (540, 15), (565, 35),
         (578, 70), (585, 110), (590, 150), (605, 170), (620, 195), (626, 225), (622, 250), (610, 268), (608, 290),
         (610, 320), (600, 380), (560, 400), (540, 455)],
    ],
    "sample3": [
        [(0, 450), (0, 425), (12, 392), (30, 360), (80, 350), (125, 350), (130, 320), (128, 280), (100, 240),
         (78, 225), (80, 212), (117, 195), (147, 182), (165, 165), (180, 140), (185, 110), (195, 85), (220, 72),
         (255, 75), (280, 95), (300, 120), (310, 150), (315, 175), (338, 168), (358, 158), (362, 120), (362, 85),
         (375, 58), (400, 45), (430, 48), (455, 65), (470, 85), (480, 80), (500, 70), (530, 72), (552, 88),
         (562, 115), (562, 150), (556, 175), (556, 195), (570, 212), (582, 228), (590, 250), (596, 300),
         (610, 340), (630, 385), (640, 410), (640, 450)],
    ],
}
HOLES: dict[str, list[list[tuple[int, int]]]] = {
    "sample2": [
        [(418, 140), (445, 135), (450, 200), (445, 240), (432, 250), (418, 235), (415, 200)],
    ],
}
"""Background inside an outline (a red cushion between two people)."""


def photo(name: str) -> np.ndarray:
    """The photo as outlined, BGR."""
    paths = {path.stem: path for path in fetch(DEVELOPMENT)} if name.startswith("sample") else {name: sample_path(name)}
    bgr = cv2.imread(str(paths[name]))
    if bgr.shape[1] > 1000:
        size = (bgr.shape[1] // GROUP_SHRINK, bgr.shape[0] // GROUP_SHRINK)
        bgr = cv2.resize(bgr, size, interpolation=cv2.INTER_AREA)
    return bgr


def hand_mask(name: str) -> np.ndarray:
    """The mask of photo `name` (uint8, 1: the person)."""
    bgr = photo(name)
    outline, hole = np.zeros(bgr.shape[:2], np.uint8), np.zeros(bgr.shape[:2], np.uint8)
    for points in OUTLINES[name]:
        cv2.fillPoly(outline, [np.array(points, np.int32)], 1)
    for points in HOLES.get(name, []):
        cv2.fillPoly(outline, [np.array(points, np.int32)], 0)
        cv2.fillPoly(hole, [np.array(points, np.int32)], 1)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * BAND + 1, 2 * BAND + 1))
    inner, outer = cv2.erode(outline, kernel), cv2.dilate(outline, kernel)
    labels = np.where(outer == 0, cv2.GC_BGD, np.where(inner == 1, cv2.GC_FGD,
                      np.where(outline == 1, cv2.GC_PR_FGD, cv2.GC_PR_BGD))).astype(np.uint8)
    labels[hole == 1] = cv2.GC_BGD
    cv2.setRNGSeed(0)
    cv2.grabCut(bgr, labels, None, np.zeros((1, 65)), np.zeros((1, 65)), 5, cv2.GC_INIT_WITH_MASK)
    return ((labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)).astype(np.uint8)


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in OUTLINES:
        Image.fromarray(hand_mask(name) * 255).convert("1").save(folder / f"{name}.png", optimize=True)
        print(folder / f"{name}.png")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

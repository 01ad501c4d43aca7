"""`slimfuse bench quality`: does the embedded mesh swap look like a photo?

Every figure comes from a judge that does not share the swapper's landmarks: dlib's HOG detector finds the face
box, dlib's 5-point predictor the eye corners, dlib's ResNet the 128-d identity descriptor. The swaps go the way
the pipeline does them (FaceAnalyser, MeshSwapProcessor's prepare / crop / process, paste_back) on the packaged
photos and on variations the bench makes from them: a grey face inside a colour photo, glasses drawn onto a photo
(rims, bridge and temple arms), a still video clip with noise.

Figures (each with its goal):
- detail: variance of the Laplacian over the central 60 % of the face box, output over the target's.
- PSNR: over the face box, output against the target (for a face swapped onto itself).
- border step: the fine detail just inside the swapped region over that just outside it, on the cheeks.
- identity: dlib distance of the output to the source and to the target; also at a webcam's face size (150 px in
  640x480, through JPEG), where the target's outline and texture weigh more.
- chroma: the largest (99.9th percentile) max-min of R, G, B inside the face box.
- magenta: the share of face-box pixels whose green lies clearly below both red and blue, against the photos'.
- stray pixels: near the eyes (or mouth), the share of output pixels that neither photo has there (more chroma
  or darker than both).
- mouth: the inner-lip opening (a fresh FaceMesh run on the output) against the target's.
- flicker: on a still clip, the mouth region's mean frame-to-frame change, output over input.
- glasses: the share of the target's drawn rims kept, and of the source's drawn rims that reach the output (darker
  than anything near in the swap of the source without them).
"""
from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from slimfuse.metrics import psnr

PAIRS = (("astronaut", "grace_hopper"), ("grace_hopper", "astronaut"))
GLASSES_SOURCE = "grace_hopper"  # the portrait wearing glasses
IDENTITY_GOAL = 0.45
FRAMES_LEFT_OUT_GOAL = 0.50
"""dlib counts glasses as likeness: the glasses source's frames left out (the default) cost it about 0.05."""
POISSON_MARGIN = 0.03  # Poisson blending's identity within this of the feathered blend's: dlib's distance moves by
# about 0.02 with sub-pixel changes (the brows' ramp measured on a finer grid moved the feathered Grace Hopper onto
# the astronaut from 0.495 to 0.473), so the difference of two readings needs more than that
CENTRAL = 0.6


# ------------------------------------------------------------------------------------------------- the judge

class Judge:
    """dlib's face box, eye corners and identity descriptor; detail, colour and difference measures."""

    def __init__(self, predictor_path: Path, recognizer_path: Path) -> None:
        import dlib

        self._dlib = dlib
        self.detector = dlib.get_frontal_face_detector()
        self.predictor = dlib.shape_predictor(str(predictor_path))
        self.recognizer = dlib.face_recognition_model_v1(str(recognizer_path))

    def _rect(self, image: np.ndarray):  # type: ignore[no-untyped-def]
        img = np.ascontiguousarray(image)
        rects = self.detector(img, 1)
        if not len(rects):
            raise ValueError("dlib finds no face")
        return max(rects, key=lambda r: r.area())

    def box(self, image: np.ndarray) -> tuple[int, int, int, int]:
        """The largest face's box (x0, y0, x1, y1), clipped to the image."""
        r = self._rect(image)
        h, w = image.shape[:2]
        return max(r.left(), 0), max(r.top(), 0), min(r.right(), w), min(r.bottom(), h)

    def eyes(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two eye centres (x, y) from dlib's 5-point shape (each the mean of its two corners)."""
        img = np.ascontiguousarray(image)
        shape = self.predictor(img, self._rect(img))
        p = np.array([[shape.part(i).x, shape.part(i).y] for i in range(5)], dtype=np.float64)
        return (p[0] + p[1]) / 2, (p[2] + p[3]) / 2

    def descriptor(self, image: np.ndarray) -> np.ndarray:
        img = np.ascontiguousarray(image)
        return np.asarray(self.recognizer.compute_face_descriptor(img, self.predictor(img, self._rect(img))))

    def distance(self, a: np.ndarray, b: np.ndarray) -> float:
        return float(np.linalg.norm(self.descriptor(a) - self.descriptor(b)))


def central(box: tuple[int, int, int, int], share: float = CENTRAL) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = box
    mx, my = (x1 - x0) * (1 - share) / 2, (y1 - y0) * (1 - share) / 2
    return int(round(x0 + mx)), int(round(y0 + my)), int(round(x1 - mx)), int(round(y1 - my))


def gray(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(np.float32)


def laplacian(image: np.ndarray) -> np.ndarray:
    return cv2.Laplacian(gray(image), cv2.CV_32F, ksize=1)


def detail(image: np.ndarray, box: tuple[int, int, int, int]) -> float:
    """Variance of the Laplacian over the central 60 % of `box`."""
    x0, y0, x1, y1 = central(box)
    return float(laplacian(image)[y0:y1, x0:x1].var())


def face_psnr(a: np.ndarray, b: np.ndarray, box: tuple[int, int, int, int]) -> float:
    x0, y0, x1, y1 = box
    return psnr(a[y0:y1, x0:x1], b[y0:y1, x0:x1])


def chroma(image: np.ndarray) -> np.ndarray:
    img = image.astype(np.int16)
    return (img.max(axis=2) - img.min(axis=2)).astype(np.float32)


def face_chroma(image: np.ndarray, box: tuple[int, int, int, int]) -> float:
    x0, y0, x1, y1 = box
    return float(np.percentile(chroma(image[y0:y1, x0:x1]), 99.9))


def magenta_share(image: np.ndarray, box: tuple[int, int, int, int], margin: int = 6) -> float:
    x0, y0, x1, y1 = box
    img = image[y0:y1, x0:x1].astype(np.int16)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return float(((r - g > margin) & (b - g > margin)).mean())


def stray_share(output: np.ndarray, photos: list[np.ndarray], zone: np.ndarray, reach: int = 4) -> float:
    """The share of `zone` pixels of `output` that no photo has nearby (within `reach` pixels): more colourful
    than the most colourful of them there by 15 levels, or darker than the darkest by 25 (fringes, blobs)."""
    if not zone.any():
        return 0.0
    kernel = np.ones((2 * reach + 1, 2 * reach + 1), np.uint8)
    c_max = np.max([cv2.dilate(chroma(p), kernel) for p in photos], axis=0) + 15
    y_min = np.min([cv2.erode(gray(p), kernel) for p in photos], axis=0) - 25
    bad = (chroma(output) > c_max) | (gray(output) < y_min)
    return float(bad[zone].mean())


def rims_kept(output: np.ndarray, target: np.ndarray, rims: np.ndarray) -> float:
    """The share of the target's drawn rim pixels that the output keeps (within 24 levels)."""
    return float((np.abs(output.astype(np.int16) - target.astype(np.int16)).max(axis=2)[rims] <= 24).mean())


def identity_goal(source: str) -> tuple[float, str]:
    """The likeness goal of a swap from `source` (dlib distance), and how the table states it."""
    if source == GLASSES_SOURCE:
        return FRAMES_LEFT_OUT_GOAL, f"<= {FRAMES_LEFT_OUT_GOAL} (her frames left out)"
    return IDENTITY_GOAL, f"<= {IDENTITY_GOAL}"


def new_dark(output: np.ndarray, reference: np.ndarray, zone: np.ndarray, reach: int = 2,
             target: np.ndarray | None = None) -> float:
    """The share of `zone` pixels of `output` darker by 40 levels than all of `reference` within `reach` pixels: the
    source's rims, where `reference` is the swap of the same source without glasses. The reach allows for the
    source's own brows and lids, which glasses move a little in FaceMesh. With the `target`, what is dark there
    (its own frames, which may show where the source's are left out) is not new either."""
    kernel = np.ones((2 * reach + 1, 2 * reach + 1), np.uint8)
    darkest = gray(reference) if target is None else np.minimum(gray(reference), gray(target))
    return float((gray(output) < cv2.erode(darkest, kernel) - 40)[zone].mean())


def band_detail(image: np.ndarray, band: np.ndarray) -> float:
    return float(laplacian(image)[band].var()) if band.sum() > 20 else float("nan")


def border_bands(changed: np.ndarray, box: tuple[int, int, int, int],
                 eyes: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Cheek bands just inside (fully past the blend ramp is not required) and just outside the changed
    region, between eye and mouth height, each a tenth of the face box wide."""
    size = max(box[2] - box[0], box[3] - box[1])
    width = max(3, int(round(0.1 * size)))
    inside_d = cv2.distanceTransform(changed.astype(np.uint8), cv2.DIST_L2, 5)
    outside_d = cv2.distanceTransform((~changed).astype(np.uint8), cv2.DIST_L2, 5)
    eye_y = (eyes[0][1] + eyes[1][1]) / 2
    rows = np.zeros(changed.shape, dtype=bool)
    rows[int(eye_y + 0.1 * size):int(eye_y + 0.45 * size)] = True
    inside = rows & (inside_d > 0) & (inside_d <= width)
    outside = rows & (outside_d > 0) & (outside_d <= width)
    # only beside the face: columns outside the eyes
    cols = np.zeros(changed.shape, dtype=bool)
    left, right = min(eyes[0][0], eyes[1][0]), max(eyes[0][0], eyes[1][0])
    cols[:, :int(left)] = True
    cols[:, int(right):] = True
    return inside & cols, outside & cols


# ------------------------------------------------------------------------------------------------- variations

def grey_face(image: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """The photo with the head (an ellipse around the face box, 1.7x) grey and the rest in colour."""
    x0, y0, x1, y1 = box
    mask = np.zeros(image.shape[:2], np.float32)
    centre = (int((x0 + x1) / 2), int((y0 + y1) / 2 - 0.1 * (y1 - y0)))
    axes = (int(0.85 * (x1 - x0)), int(0.95 * (y1 - y0)))
    cv2.ellipse(mask, centre, axes, 0, 0, 360, 1.0, -1)
    mask = cv2.GaussianBlur(mask, (0, 0), 0.05 * (x1 - x0))[..., None]
    g = cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB).astype(np.float32)
    return np.clip(np.rint(g * mask + image.astype(np.float32) * (1 - mask)), 0, 255).astype(np.uint8)


def draw_glasses(image: np.ndarray, eyes: tuple[np.ndarray, np.ndarray],
                 box: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Plausible dark glasses (two rims, a bridge, temple arms running to the face's sides) drawn onto a copy
    of `image` at dlib's eye centres. Returns (image, the rims' mask)."""
    (ax, ay), (bx, by) = sorted([tuple(e) for e in eyes])
    dist = math.hypot(bx - ax, by - ay)
    angle = math.degrees(math.atan2(by - ay, bx - ax))
    thick = max(2, int(round(0.045 * dist)))
    rx, ry = int(round(0.42 * dist)), int(round(0.30 * dist))
    mask = np.zeros(image.shape[:2], np.uint8)
    sub = 4
    S = 1 << sub
    for cx, cy in ((ax, ay), (bx, by)):
        cv2.ellipse(mask, (int(cx * S), int(cy * S + 0.05 * dist * S)), (rx * S, ry * S), angle, 0, 360, 255,
                    thick, cv2.LINE_AA, sub)
    ux, uy = (bx - ax) / dist, (by - ay) / dist
    # bridge: between the rims' inner tops
    p = (ax + ux * rx, ay + uy * rx - 0.08 * dist)
    q = (bx - ux * rx, by - uy * rx - 0.08 * dist)
    cv2.line(mask, (int(p[0] * S), int(p[1] * S)), (int(q[0] * S), int(q[1] * S)), 255, thick, cv2.LINE_AA, sub)
    # temple arms: from the rims' outer edges outward past the face box's sides
    half = 0.5 * (box[2] - box[0])
    for cx, cy, sign in ((ax, ay, -1), (bx, by, 1)):
        start = (cx + sign * ux * rx, cy + sign * uy * rx - 0.05 * dist)
        end = (cx + sign * ux * (half * 1.05), cy + sign * uy * (half * 1.05) + 0.05 * dist)
        cv2.line(mask, (int(start[0] * S), int(start[1] * S)), (int(end[0] * S), int(end[1] * S)), 255,
                 max(2, thick - 1), cv2.LINE_AA, sub)
    a = (mask.astype(np.float32) / 255.0)[..., None]
    frame_colour = np.array([28, 22, 20], np.float32)
    out = image.astype(np.float32) * (1 - a) + frame_colour * a
    return np.clip(np.rint(out), 0, 255).astype(np.uint8), mask > 127


# ------------------------------------------------------------------------------------------------- swapping

class Swapper:
    """Swaps through the real pipeline (slimfuse.Swapper: analysis, tracking, the mesh swapper, paste-back), one
    run per source photo and options, its models shared."""

    def __init__(self, store: object = None) -> None:
        self.store = store
        self._runs: dict[tuple[int, str], object] = {}

    def _swapper(self, source: np.ndarray, options: dict[str, object]):  # type: ignore[no-untyped-def]
        from slimfuse.api import Swapper as ApiSwapper

        key = (id(source), repr(sorted(options.items())))
        if key not in self._runs:
            self._runs[key] = (ApiSwapper([source], **options), source)  # the source is held so its id stays its own
        return self._runs[key][0]  # type: ignore[index]

    def __call__(self, source: np.ndarray, target: np.ndarray, **options: object) -> tuple[np.ndarray, np.ndarray]:
        """(output frame, changed mask) of the swap of `source`'s face onto `target`'s. options: the API's."""
        out = self._swapper(source, options).swap_image(target)
        return out, (out != target).any(axis=2)

    def stream(self, source: np.ndarray, frames: list[np.ndarray], fps: float = 25.0) -> list[np.ndarray]:
        """The frames of a clip swapped as a video is: faces tracked and their landmarks smoothed."""
        return list(self._swapper(source, {}).stream(frames, fps))

    def close(self) -> None:
        for swapper, _ in self._runs.values():  # type: ignore[misc]
            swapper.close()
        self._runs.clear()


# ------------------------------------------------------------------------------------------------- figures

@dataclass(frozen=True)
class Figure:
    case: str
    name: str
    value: float
    goal: str
    ok: bool


@dataclass
class Results:
    figures: list[Figure] = field(default_factory=list)

    def add(self, case: str, name: str, value: float, goal: str, ok: bool) -> None:
        self.figures.append(Figure(case, name, float(value), goal, bool(ok)))

    def get(self, case: str, name: str) -> float:
        for f in self.figures:
            if f.case == case and f.name == name:
                return f.value
        raise KeyError((case, name))

    @property
    def passed(self) -> bool:
        return all(f.ok for f in self.figures)

    def markdown(self, first_column: str = "case") -> str:
        lines = [f"| {first_column} | figure | value | goal | |", "|---|---|---|---|---|"]
        for f in self.figures:
            lines.append(f"| {f.case} | {f.name} | {f.value:.3f} | {f.goal} | {'ok' if f.ok else 'MISSED'} |")
        return "\n".join(lines)


@dataclass
class Crop:
    name: str
    target: np.ndarray
    output: np.ndarray
    box: tuple[int, int, int, int]
    zoom: tuple[float, float, float, float] = (0.15, 0.2, 0.85, 0.75)  # share of the box to enlarge


def load_photos() -> dict[str, np.ndarray]:
    from slimfuse.samples import sample_path

    return {name: np.asarray(Image.open(sample_path(name)).convert("RGB")) for name in ("grace_hopper", "astronaut")}


class QualityBench:
    def __init__(self, store=None, notify: Callable[[str], None] = lambda message: None) -> None:  # type: ignore[no-untyped-def]
        from slimfuse.faces.analyse import FaceAnalyser
        from slimfuse.faces.identity import PREDICTOR, RECOGNIZER
        from slimfuse.models.mesh_topology import MeshTopology
        from slimfuse.models.pool import ModelPool
        from slimfuse.models.store import Store

        self.store = store if store is not None else Store(notify=notify)
        self.pool = ModelPool(self.store)
        self.judge = Judge(self.store.path(PREDICTOR), self.store.path(RECOGNIZER))
        topology = MeshTopology.from_json(self.store.path("face_mesh_topology").read_text(encoding="utf-8"))
        self.topology = topology
        self.analyser = FaceAnalyser(self.pool)
        self.swap = Swapper()
        self.photos = load_photos()
        self.crops: list[Crop] = []

    # ------------------------------------------------------------------------------------------- cases

    def self_swaps(self, r: Results) -> None:
        for name, photo in self.photos.items():
            out, _ = self.swap(photo, photo)
            box = self.judge.box(photo)
            keep = detail(out, box) / detail(photo, box)
            r.add(f"{name} onto itself", "detail kept", keep, ">= 0.90", keep >= 0.90)
            p = face_psnr(out, photo, box)
            r.add(f"{name} onto itself", "face PSNR dB", p, ">= 40", p >= 40)
            # the mirror image as the source: the same person, another mesh, so the warp does real work
            mirrored, _ = self.swap(np.ascontiguousarray(photo[:, ::-1]), photo)
            keep_m = detail(mirrored, box) / detail(photo, box)
            r.add(f"{name} mirrored onto itself", "detail kept", keep_m, ">= 0.90", keep_m >= 0.90)
            r.add(f"{name} mirrored onto itself", "face PSNR dB", face_psnr(mirrored, photo, box), "(a mirror differs)",
                  True)

    def cross_swaps(self, r: Results) -> None:
        for source, target in PAIRS:
            s, t = self.photos[source], self.photos[target]
            case = f"{source} -> {target}"
            out, changed = self.swap(s, t)
            box = self.judge.box(t)
            d_src, d_tgt = self.judge.distance(out, s), self.judge.distance(out, t)
            goal, goal_text = identity_goal(source)
            r.add(case, "identity: to source", d_src, goal_text, d_src <= goal)
            r.add(case, "identity: to target", d_tgt, "> to source", d_tgt > d_src)
            if source == GLASSES_SOURCE:
                brought = self.judge.distance(self.swap(s, t, remove_source_glasses=False)[0], s)
                r.add(case + " --no-remove-source-glasses", "identity: to source", brought, f"<= {IDENTITY_GOAL}",
                      brought <= IDENTITY_GOAL)
            keep = detail(out, box) / detail(t, box)
            r.add(case, "detail kept", keep, ">= 0.25", keep >= 0.25)
            inside, outside = border_bands(changed, box, self.judge.eyes(t))
            step = band_detail(out, inside) / band_detail(out, outside)
            r.add(case, "border step (in/out)", step, "0.5-2", 0.5 <= step <= 2.0)
            r.add(case, "chroma excess", face_chroma(out, box) - max(face_chroma(t, box), face_chroma(s, self.judge.box(s))),
                  "<= 0", face_chroma(out, box) <= max(face_chroma(t, box), face_chroma(s, self.judge.box(s))))
            mag = magenta_share(out, box)
            ref = max(magenta_share(t, box), magenta_share(s, self.judge.box(s)))
            r.add(case, "magenta share", mag, f"<= photos' + 0.002 ({ref:.4f})", mag <= ref + 0.002)
            eyes = self.judge.eyes(t)
            zone = eye_zone(t.shape[:2], eyes)
            warped_src = self._aligned_source(s, t)
            stray = stray_share(out, [t, warped_src], zone)
            r.add(case, "stray pixels at the eyes", stray, "<= 0.005", stray <= 0.005)
            self.crops.append(Crop(f"{source}_to_{target}", t, out, box))
            # --keep-eyes
            out_e, _ = self.swap(s, t, keep_eyes=True)
            stray_e = stray_share(out_e, [t, warped_src], zone)
            r.add(case + " --keep-eyes", "stray pixels at the eyes", stray_e, "<= 0.005", stray_e <= 0.005)
            if target == "grace_hopper":
                self.crops.append(Crop(f"{source}_to_{target}_keep_eyes", t, out_e, box, (0.1, 0.15, 0.9, 0.55)))
            # --blend poisson
            out_p, _ = self.swap(s, t, blend="poisson")
            dp = self.judge.distance(out_p, s)
            r.add(case + " --blend poisson", "identity: to source", dp,
                  f"<= feather + {POISSON_MARGIN:g} ({d_src:.3f})", dp <= d_src + POISSON_MARGIN)
            # mouth state
            mo_t, mo_o = self.mouth_opening(t), self.mouth_opening(out)
            same = (mo_t > OPEN) == (mo_o > OPEN)
            r.add(case, "mouth opening: output (target)", mo_o, f"same state as target ({mo_t:.3f})", same)

    def live_size(self, r: Results, frames: int = 12) -> None:
        """Both pairs at the size a webcam shows a face (150 px in 640x480, the camera panning), through JPEG as a
        browser camera sends it, swapped as a stream: the median identity over the frames."""
        import io

        from slimfuse.bench.clips import pan
        from slimfuse.samples import ASTRONAUT_FACE, GRACE_HOPPER_FACE

        boxes = {"astronaut": ASTRONAUT_FACE, "grace_hopper": GRACE_HOPPER_FACE}

        def jpeg(frame: np.ndarray) -> np.ndarray:
            data = io.BytesIO()
            Image.fromarray(frame).save(data, "JPEG", quality=80)
            return np.asarray(Image.open(data).convert("RGB"))

        for source, target in PAIRS:
            s, t = self.photos[source], self.photos[target]
            camera = [jpeg(f) for f in pan(t, (640, 480), frames, boxes[target], face_px=150)]
            outputs = self.swap.stream(s, camera, 15.0)[2::3]
            d_src = float(np.median([self.judge.distance(o, s) for o in outputs]))
            d_tgt = float(np.median([self.judge.distance(o, t) for o in outputs]))
            case = f"{source} -> {target} at 150 px, JPEG"
            goal, goal_text = identity_goal(source)
            r.add(case, "identity: to source", d_src, goal_text, d_src <= goal)
            r.add(case, "identity: to target", d_tgt, "> to source + 0.1", d_tgt > d_src + 0.1)

    def _aligned_source(self, source: np.ndarray, target: np.ndarray) -> np.ndarray:
        """The source photo moved (similarity on dlib's eye centres) onto the target: a colour reference."""
        (a0, a1), (b0, b1) = self.judge.eyes(source), self.judge.eyes(target)
        src = np.array([a0, a1], np.float32)
        dst = np.array([b0, b1], np.float32)
        m, _ = cv2.estimateAffinePartial2D(src, dst)
        return cv2.warpAffine(source, m, (target.shape[1], target.shape[0]), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REFLECT)

    def mouth_opening(self, image: np.ndarray) -> float:
        """Inner-lip opening over face height, from a FaceMesh run on `image` itself."""
        face = self.analyser.faces(image)[0]
        lm = face.landmarks[:, :2]
        inner = lm[list(self.topology.lips_inner)]
        oval = lm[list(self.topology.face_oval)]
        area = 0.5 * abs(float(np.sum(inner[:, 0] * np.roll(inner[:, 1], -1) - np.roll(inner[:, 0], -1) * inner[:, 1])))
        width = float(inner[:, 0].max() - inner[:, 0].min())
        height = float(oval[:, 1].max() - oval[:, 1].min())
        return area / max(width, 1.0) / max(height, 1.0)

    def grey(self, r: Results) -> None:
        t = grey_face(self.photos["astronaut"], self.judge.box(self.photos["astronaut"]))
        s = self.photos["grace_hopper"]
        out, _ = self.swap(s, t)
        box = self.judge.box(t)
        c = face_chroma(out, box)
        r.add("grace_hopper -> grey astronaut", "chroma in the face", c, f"<= 5 (target {face_chroma(t, box):.1f})",
              c <= 5)
        self.crops.append(Crop("grace_hopper_to_grey_astronaut", t, out, box))

    def glasses(self, r: Results) -> None:
        """Drawn glasses on the source do not come along (by default; --no-remove-source-glasses brings them), and
        drawn glasses on the target stay in front with --keep-occluders (off by default: dlib counts glasses as
        likeness, so a target's own frames kept in front move the distance by 0.05-0.07). --eye-region target is
        shown beside them."""
        g, a = self.photos["grace_hopper"], self.photos["astronaut"]
        gbox = self.judge.box(g)
        tg, rims = draw_glasses(g, self.judge.eyes(g), gbox)
        sg, _ = draw_glasses(a, self.judge.eyes(a), self.judge.box(a))
        zone = eye_zone(g.shape[:2], self.judge.eyes(g), 1.6)
        kept_label, brought_label = "--keep-occluders", "--no-remove-source-glasses"
        onto: dict[str, np.ndarray] = {}  # the astronaut onto the target with glasses
        wearing: dict[str, np.ndarray] = {}  # the astronaut with glasses onto the target
        plain: dict[str, np.ndarray] = {}  # the astronaut onto the target
        for label, options in (("default", {}), ("--eye-region target", {"eye_region": "target"}),
                               (kept_label, {"keep_occluders": True}),
                               (brought_label, {"remove_source_glasses": False})):
            onto[label], wearing[label], plain[label] = (self.swap(s, t, **options)[0]
                                                         for s, t in ((a, tg), (sg, g), (a, g)))
            kept = rims_kept(onto[label], tg, rims)
            goal = label == kept_label
            r.add(f"astronaut -> grace_hopper with glasses, {label}", "target's rims kept", kept,
                  ">= 0.95" if goal else "(see the options)", kept >= 0.95 or not goal)
            share = new_dark(wearing[label], plain[label], zone, target=g)
            goal = label != brought_label
            r.add(f"astronaut with glasses -> grace_hopper, {label}", "source rims in the output", share,
                  "<= 0.005" if goal else "(asked for)", share <= 0.005 or not goal)
        d_src, d_tgt = self.judge.distance(plain[kept_label], a), self.judge.distance(plain[kept_label], g)
        case = "astronaut -> grace_hopper, --keep-occluders (her own glasses in front)"
        r.add(case, "identity: to source", d_src, f"< to target ({d_tgt:.3f})", d_src < d_tgt)
        zoom = (0.0, 0.1, 1.0, 0.6)
        self.crops.append(Crop("astronaut_to_grace_hopper_glasses", tg, onto["default"], gbox, zoom))
        self.crops.append(Crop("astronaut_to_grace_hopper_glasses_kept", tg, onto[kept_label], gbox, zoom))
        self.crops.append(Crop("astronaut_with_glasses_to_grace_hopper_removed", g, wearing["default"], gbox, zoom))
        self.crops.append(Crop("astronaut_with_glasses_to_grace_hopper", g, wearing[brought_label], gbox, zoom))

    def open_mouth(self, r: Results) -> None:
        """The target with an open mouth (the astronaut's smile): its teeth stay, the source's lips around them."""
        s, t = self.photos["grace_hopper"], self.photos["astronaut"]
        out, _ = self.swap(s, t)
        box = self.judge.box(t)
        self.crops.append(Crop("grace_hopper_to_astronaut_open_mouth", t, out, box, (0.2, 0.55, 0.8, 1.0)))
        # and a closed target under an open source: no slit
        out2, _ = self.swap(t, s)
        sbox = self.judge.box(s)
        self.crops.append(Crop("astronaut_to_grace_hopper_mouth", s, out2, sbox, (0.2, 0.55, 0.8, 1.0)))

    def still_clip(self, r: Results, frames: int = 10) -> None:
        """grace_hopper's portrait as a still clip (fresh sensor noise each frame, H.264): the mouth region's
        mean frame-to-frame change in the output over the input's."""
        import av

        from slimfuse.bench.clips import make_clip

        g, a = self.photos["grace_hopper"], self.photos["astronaut"]
        rng = np.random.default_rng(7)
        noisy = [np.clip(g.astype(np.float32) + rng.normal(0, 3.0, g.shape), 0, 255).astype(np.uint8)
                 for _ in range(frames)]
        with tempfile.TemporaryDirectory(prefix="slimfuse-quality-") as work:
            path = make_clip(Path(work) / "still.mp4", noisy, preset="medium", crf=14)
            with av.open(str(path)) as container:
                decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        face = self.analyser.faces(decoded[0])[0]
        zone = lips_zone(g.shape[:2], face.landmarks, self.topology)
        outputs = self.swap.stream(a, decoded)

        def change(seq: list[np.ndarray]) -> float:
            return float(np.mean([np.abs(x.astype(np.float32) - y.astype(np.float32))[zone].mean()
                                  for x, y in zip(seq, seq[1:], strict=False)]))

        out_change, in_change = change(outputs), change(decoded)
        r.add("astronaut -> grace_hopper still clip", "mouth change per frame, levels", out_change,
              f"<= the input's ({in_change:.2f})", out_change <= in_change)

    def run(self, cases: tuple[str, ...] = ()) -> Results:
        r = Results()
        steps: dict[str, Callable[[Results], None]] = {
            "self": self.self_swaps, "cross": self.cross_swaps, "grey": self.grey, "glasses": self.glasses,
            "mouth": self.open_mouth, "clip": self.still_clip, "live": self.live_size}
        try:
            for name, step in steps.items():
                if not cases or name in cases:
                    step(r)
        finally:
            self.swap.close()
        return r


OPEN = 0.012  # inner-lip opening over face height above which a mouth counts as open


def eye_zone(shape: tuple[int, int], eyes: tuple[np.ndarray, np.ndarray], reach: float = 1.0) -> np.ndarray:
    """Ellipses around dlib's eye centres (half the eye distance wide, times `reach`)."""
    dist = float(np.linalg.norm(eyes[1] - eyes[0]))
    zone = np.zeros(shape, np.uint8)
    for e in eyes:
        cv2.ellipse(zone, (int(e[0]), int(e[1])), (int(0.45 * dist * reach), int(0.3 * dist * reach)), 0, 0, 360,
                    1, -1)
    return zone > 0


def lips_zone(shape: tuple[int, int], landmarks: np.ndarray, topology) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The outer lip polygon (of the input's own FaceMesh run), grown by a few pixels."""
    zone = np.zeros(shape, np.uint8)
    poly = np.round(landmarks[list(topology.lips_outer), :2]).astype(np.int32)
    cv2.fillPoly(zone, [poly], 1)
    return cv2.dilate(zone, np.ones((7, 7), np.uint8)) > 0


# ------------------------------------------------------------------------------------------------- pictures

def crop_panel(c: Crop, height: int = 200) -> np.ndarray:
    """target | result | target enlarged | result enlarged, side by side."""
    x0, y0, x1, y1 = c.box
    w, h = x1 - x0, y1 - y0
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    side = int(1.35 * max(w, h))
    X0, Y0 = int(cx - side / 2), int(cy - side / 2 - 0.05 * side)

    def cut(img: np.ndarray, ax0: int, ay0: int, aw: int, ah: int, out_h: int) -> np.ndarray:
        pad = cv2.copyMakeBorder(img, side, side, side, side, cv2.BORDER_REPLICATE)
        part = pad[ay0 + side:ay0 + side + ah, ax0 + side:ax0 + side + aw]
        out_w = int(round(aw * out_h / ah))
        interp = cv2.INTER_AREA if out_h < ah else cv2.INTER_NEAREST
        return cv2.resize(part, (out_w, out_h), interpolation=interp)

    zx0, zy0, zx1, zy1 = c.zoom
    ZX0, ZY0 = int(x0 + zx0 * w), int(y0 + zy0 * h)
    zw, zh = max(8, int((zx1 - zx0) * w)), max(8, int((zy1 - zy0) * h))
    panels = [cut(c.target, X0, Y0, side, side, height), cut(c.output, X0, Y0, side, side, height),
              cut(c.target, ZX0, ZY0, zw, zh, height), cut(c.output, ZX0, ZY0, zw, zh, height)]
    gap = np.full((height, 4, 3), 255, np.uint8)
    row = []
    for p in panels:
        row += [p, gap]
    return np.hstack(row[:-1])


def write_crops(crops: list[Crop], folder: Path, suffix: str = ".jpg") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for c in crops:
        path = folder / f"{c.name}{suffix}"
        img = Image.fromarray(crop_panel(c))
        if suffix == ".jpg":
            img.save(path, quality=88)
        else:
            img.save(path)
        paths.append(path)
    return paths


def run(json_path: Path | None = None, crops: Path | None = None, cases: tuple[str, ...] = (),
        crop_format: str = "jpg", store=None) -> Results:  # type: ignore[no-untyped-def]
    bench = QualityBench(store)
    results = bench.run(cases)
    print(results.markdown())
    if json_path is not None:
        json_path.write_text(json.dumps([asdict(f) for f in results.figures], indent=2))
    if crops is not None:
        for path in write_crops(bench.crops, crops, "." + crop_format):
            print(f"wrote {path}")
    return results



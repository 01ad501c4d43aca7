"""`slimfuse bench quality --real-photos`: the mesh swap on real group photos, judged face by face by dlib.

Targets: each photo of the set (photo_set.py: the development set by default; `--photos held-out` for the
independent check, on which nothing is tuned), flipped, cropped to its faces, rescaled to 640 px wide and through
JPEG at quality 70. Sources: both packaged portraits (the astronaut has a fringe; Grace Hopper wears glasses and a
hat). Every face the judge finds in a target counts (face_judge.py), whether the swapper finds it or not: one the
swapper leaves alone scores as the target's own face. Each output face is read by dlib's 68-point predictor in the
target's face box; the measures are in face_measures.py. A live-size case puts each face of the original photos at
150 px in a 640x480 frame through JPEG at quality 80, as a webcam sends it.

The figures, one table row each, grouped by the goals of the issue they answer (the goal's number where the
issue gives one; "share" rows pass at 96 %, the issue's own bar for a share of faces):
- expression: closed target eyes (EAR < 0.2) that the output opens (EAR >= 0.2), open ones it closes, the median
  |EAR output - EAR target| over all eyes, the median inner-mouth opening error (face heights);
- identity: the share of faces carrying the source (dlib distance < 0.6 and nearer the source than the target's own
  face), the median distance to the source; the same at live size;
- nothing of the source but the face: the forehead band's brightness change (|mean grey output - target| within 5
  levels: "a few"), per source; the glasses source's new dark pixels around the eyes (darker by 40 levels than the
  target anywhere near) beyond those the other source leaves on the same face (both bring lashes, brows and lid
  lines; only one brings frames), and each source's new thin light lines there (light or tan lower rims; wrinkles'
  and lids' highlights too, so no goal). No target of the set wears glasses: the portrait section's drawn glasses
  measure the target's kept in front;
- turned faces: each cheek's CIELAB a*, b* within 6 of the target's (faces up to 60 degrees of yaw as the 68 points
  give it; they cannot fit a profile, whose yaw reads 50 or so), the far cheek's detail (Laplacian variance) output
  over target, for stretched texture (no goal given: the source's own texture raises it too);
- paste edge: the gradient in a band along the border of the pasted region (found as where the output differs from
  the target, next to the jaw line and across the forehead) within 1.1x of the target's there, either way. A
  source with more texture than the target (wrinkles) raises it as a seam does.
"""
from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from slimfuse.bench import face_measures as fm
from slimfuse.bench.face_judge import Box, FaceJudge, FoundFace, JudgeUnavailable
from slimfuse.bench.photo_set import PHOTO_SETS, PhotosUnavailable, fetch
from slimfuse.bench.quality import GLASSES_SOURCE, Crop, Results, Swapper, load_photos, write_crops

SOURCES = ("astronaut", "grace_hopper")
FRINGE_SOURCE = "astronaut"
SAME_PERSON = 0.6  # dlib's distance below which two faces are the same person
SHARE_GOAL = 0.96
NARROW_PX = 640
JPEG_QUALITY = 70
LIVE_FACE_PX, LIVE_FRAME, LIVE_JPEG = 150, (640, 480), 80
TURNED_UP_TO = 60.0  # degrees of yaw the cheek goal covers
CHEEK_GOAL = 6.0  # CIELAB a*, b* units
FOREHEAD_GOAL = 5.0  # grey levels
EDGE_GOAL = 1.1
FRAMES_GOAL = 0.005  # share of the zone around the eyes


@dataclass(frozen=True)
class Target:
    photo: str
    variant: str
    image: np.ndarray


@dataclass(frozen=True)
class FaceRecord:
    """One target face swapped with one source: what the judge reads (JSON-ready)."""

    photo: str
    variant: str
    source: str
    box: tuple[int, int, int, int]
    face_px: int
    yaw: float
    eyes_target: tuple[float, float]
    eyes_output: tuple[float, float]
    mouth_target: float
    mouth_output: float
    to_source: float
    to_own_face: float
    forehead_change: float
    new_dark_frames: float
    new_light_lines: float
    cheek_change: tuple[float, float]
    """max(|delta a*|, |delta b*|) of each cheek (image-left, image-right)."""
    far_cheek: int
    far_cheek_detail: float
    edge_ratio: float
    edge_outline: float
    edge_ring: float

    @property
    def carries_source(self) -> bool:
        return self.to_source < SAME_PERSON and self.to_source < self.to_own_face


def variants(photo: str, image: np.ndarray, faces: list[FoundFace]) -> list[Target]:
    """The photo, flipped, cropped to its faces (one face width of margin), 640 px wide and through JPEG 70."""
    h, w = image.shape[:2]
    out = [Target(photo, "original", image), Target(photo, "flipped", np.ascontiguousarray(image[:, ::-1]))]
    if faces:
        boxes = np.array([f.box for f in faces])
        margin = int(max(b[2] - b[0] for b in boxes))
        x0, y0 = max(0, int(boxes[:, 0].min()) - margin), max(0, int(boxes[:, 1].min()) - margin)
        x1, y1 = min(w, int(boxes[:, 2].max()) + margin), min(h, int(boxes[:, 3].max()) + margin)
        out.append(Target(photo, "cropped", np.ascontiguousarray(image[y0:y1, x0:x1])))
    narrow = cv2.resize(image, (NARROW_PX, round(h * NARROW_PX / w)), interpolation=cv2.INTER_AREA)
    out.append(Target(photo, f"{NARROW_PX} px", narrow))
    out.append(Target(photo, f"JPEG {JPEG_QUALITY}", jpeg(image, JPEG_QUALITY)))
    return out


def jpeg(image: np.ndarray, quality: int) -> np.ndarray:
    data = io.BytesIO()
    Image.fromarray(image).save(data, "JPEG", quality=quality)
    return np.asarray(Image.open(data).convert("RGB"))


def live_frame(image: np.ndarray, face: FoundFace) -> np.ndarray:
    """The photo scaled so that `face` is LIVE_FACE_PX wide, a 640x480 window centred on it, through JPEG 80."""
    x0, y0, x1, y1 = face.box
    scale = LIVE_FACE_PX / (x1 - x0)
    small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    fw, fh = LIVE_FRAME
    padded = cv2.copyMakeBorder(small, fh, fh, fw, fw, cv2.BORDER_REFLECT)
    cx, cy = int((x0 + x1) / 2 * scale) + fw, int((y0 + y1) / 2 * scale) + fh
    return jpeg(np.ascontiguousarray(padded[cy - fh // 2:cy + fh // 2, cx - fw // 2:cx + fw // 2]), LIVE_JPEG)


def _region(box: Box, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The box grown by one face width each way, clipped: enough for every measure's region."""
    x0, y0, x1, y1 = box
    m = x1 - x0
    return max(0, x0 - m), max(0, y0 - m), min(shape[1], x1 + m), min(shape[0], y1 + m)


class RealPhotoBench:
    def __init__(self, judge: FaceJudge, swap: Swapper, sources: dict[str, np.ndarray],
                 notify: Callable[[str], None] = lambda message: None) -> None:
        self.judge = judge
        self.swap = swap
        self.sources = sources
        self.notify = notify
        self.source_descriptors = {name: self._only_face_descriptor(image) for name, image in sources.items()}
        self._originals: list[tuple[Target, list[FoundFace], dict[str, np.ndarray]]] = []

    def _only_face_descriptor(self, image: np.ndarray) -> np.ndarray:
        faces = self.judge.faces(image)
        if not faces:
            raise ValueError("the judge finds no face in a source portrait")
        face = max(faces, key=lambda f: f.box[2] - f.box[0])
        return self.judge.descriptor(image, face.box, face.points)

    def swapped(self, source: str, target: np.ndarray) -> np.ndarray:
        from slimfuse.errors import NoTargetFaceError

        try:
            return self.swap(self.sources[source], target, face_selector_mode="many")[0]
        except NoTargetFaceError:
            return target  # the swapper saw no face: every face the judge found scores as the target's own

    def measure(self, target: Target, source: str, output: np.ndarray, face: FoundFace,
                own: np.ndarray) -> FaceRecord:
        """One face of `output` against the same face of the target (`own`: its descriptor)."""
        # The output's face has the target's pose: it is read at the target's tilt.
        read_points = self.judge.points(output, face.box, face.tilt)
        descriptor = self.judge.descriptor(output, face.box, read_points)
        x0, y0, x1, y1 = _region(face.box, output.shape)
        out, tgt = output[y0:y1, x0:x1], target.image[y0:y1, x0:x1]
        shift = np.array([x0, y0], np.float64)
        points = face.points - shift
        out_points = read_points - shift
        shape = out.shape[:2]
        band = fm.forehead_band(shape, points)
        cheeks = [fm.cheek_mask(shape, points, c) for c in (0, 1)]
        change = []
        for mask in cheeks:
            (ta, tb), (oa, ob) = fm.lab_ab(tgt, mask), fm.lab_ab(out, mask)
            change.append(max(abs(oa - ta), abs(ob - tb)))
        far, edge = fm.far_cheek(points), fm.edge_ratios(out, tgt, points)
        frames = fm.frame_zone(shape, points, out_points)
        return FaceRecord(
            photo=target.photo, variant=target.variant, source=source, box=face.box, face_px=face.box[2] - face.box[0],
            yaw=fm.yaw_degrees(points),
            eyes_target=(fm.eye_aspect_ratio(points, 0), fm.eye_aspect_ratio(points, 1)),
            eyes_output=(fm.eye_aspect_ratio(out_points, 0), fm.eye_aspect_ratio(out_points, 1)),
            mouth_target=fm.mouth_opening(points), mouth_output=fm.mouth_opening(out_points),
            to_source=float(np.linalg.norm(descriptor - self.source_descriptors[source])),
            to_own_face=float(np.linalg.norm(descriptor - own)),
            forehead_change=fm.mean_gray(out, band) - fm.mean_gray(tgt, band),
            new_dark_frames=fm.new_dark_share(out, tgt, frames), new_light_lines=fm.new_light_lines(out, tgt, frames),
            cheek_change=(change[0], change[1]), far_cheek=far,
            far_cheek_detail=fm.laplacian_variance(out, cheeks[far]) / max(fm.laplacian_variance(tgt, cheeks[far]), 1e-6),
            edge_ratio=edge.band, edge_outline=edge.outline, edge_ring=edge.ring)

    def targets(self, photos: Iterable[Path]) -> Iterable[tuple[Target, list[FoundFace]]]:
        """Each variant of each photo with the faces the judge finds in it."""
        for path in photos:
            image = np.asarray(Image.open(path).convert("RGB"))
            faces = self.judge.faces(image)
            for target in variants(path.stem, image, faces):
                found = faces if target.variant == "original" else self.judge.faces(target.image)
                self.notify(f"{target.photo} {target.variant}: {len(found)} faces")
                yield target, found

    def run(self, photos: list[Path]) -> tuple[list[FaceRecord], list[FaceRecord]]:
        """(records of the photos' variants, records at live size), each face with each source."""
        records: list[FaceRecord] = []
        live: list[FaceRecord] = []
        for target, faces in self.targets(photos):
            own = [self.judge.descriptor(target.image, f.box, f.points) for f in faces]
            outputs = {source: self.swapped(source, target.image) for source in SOURCES}
            for source, output in outputs.items():
                records += [self.measure(target, source, output, f, d) for f, d in zip(faces, own, strict=True)]
            if target.variant == "original":
                live += self._live(target, faces)
                self._originals.append((target, faces, outputs))
        return records, live

    def _live(self, target: Target, faces: list[FoundFace]) -> list[FaceRecord]:
        found = []
        middle = np.array(LIVE_FRAME, np.float64) / 2
        for face in faces:
            frame = Target(target.photo, "live size", live_frame(target.image, face))
            seen = self.judge.faces(frame.image)
            if not seen:
                continue  # the judge cannot read it at that size: not counted (the swapper still had to)
            one = min(seen, key=lambda f: float(np.linalg.norm((np.array(f.box[:2]) + f.box[2:]) / 2 - middle)))
            own = self.judge.descriptor(frame.image, one.box, one.points)
            for source in SOURCES:
                found.append(self.measure(frame, source, self.swapped(source, frame.image), one, own))
        return found

    def readme_crops(self) -> list[Crop]:
        """Before/after crops of the original photos, the faces chosen by the targets alone (the same faces in
        every run, whatever the swapper does): every face with both eyes closed with the glasses source, whose eyes
        are wide open; of the other faces, the most turned (up to 60 degrees, and one HOG is sure of: the 68 points
        cannot fit a profile, whose yaw then reads too low) with the glasses source, and the most frontal and
        upright with the fringe source and with the glasses source."""
        faces = [(target, face, outputs) for target, found, outputs in self._originals for face in found]
        if not faces:
            return []

        def turn(item: tuple[Target, FoundFace, dict[str, np.ndarray]]) -> float:
            return abs(fm.yaw_degrees(item[1].points))

        closed = [f for f in faces if max(fm.eye_aspect_ratio(f[1].points, eye) for eye in (0, 1)) < fm.CLOSED_EYE]
        shut = {id(f[1]) for f in closed}
        open_eyed = [f for f in faces if id(f[1]) not in shut] or faces
        turned = max((f for f in open_eyed if turn(f) <= TURNED_UP_TO and f[1].score >= 0), key=turn,
                     default=open_eyed[0])
        frontal = min(open_eyed, key=lambda f: turn(f) + abs(fm.roll_degrees(f[1].points)))
        far = fm.far_cheek(turned[1].points)
        chosen = [(f"closed_eyes_{n}", face, GLASSES_SOURCE, (0.0, 0.1, 1.0, 0.6)) for n, face in enumerate(closed)]
        chosen += [
            ("turned", turned, GLASSES_SOURCE, (-0.1, 0.1, 0.6, 0.9) if far == 0 else (0.4, 0.1, 1.1, 0.9)),
            ("fringe_source", frontal, FRINGE_SOURCE, (0.0, -0.35, 1.0, 0.45)),
            ("glasses_source", frontal, GLASSES_SOURCE, (0.0, 0.0, 1.0, 0.55)),
        ]
        return [Crop(f"real_{label}_{source}_to_{target.photo}", target.image, outputs[source], face.box, zoom)
                for label, (target, face, outputs), source, zoom in chosen]


def _share(flags: list[bool]) -> float:
    return float(np.mean(flags)) if flags else float("nan")


def _median(values: list[float]) -> float:
    return float(np.nanmedian(values)) if values else float("nan")


def expression_figures(r: Results, records: list[FaceRecord]) -> None:
    eyes = [(t, o) for rec in records for t, o in zip(rec.eyes_target, rec.eyes_output, strict=True)]
    closed = [o for t, o in eyes if t < fm.CLOSED_EYE]
    opened = [o for t, o in eyes if t >= fm.CLOSED_EYE]
    n_opened, n_closed = sum(o >= fm.CLOSED_EYE for o in closed), sum(o < fm.CLOSED_EYE for o in opened)
    r.add("expression", f"closed target eyes opened (of {len(closed)})", n_opened, "0", n_opened == 0)
    r.add("expression", f"open target eyes closed (of {len(opened)})", n_closed, "0", n_closed == 0)
    eye_error = _median([abs(o - t) for t, o in eyes])
    r.add("expression", "median eye-opening error (EAR)", eye_error, "<= 0.04", eye_error <= 0.04)
    mouth_error = _median([abs(rec.mouth_output - rec.mouth_target) for rec in records])
    r.add("expression", "median inner-mouth opening error (face heights)", mouth_error, "<= 0.03", mouth_error <= 0.03)


def identity_figures(r: Results, records: list[FaceRecord], where: str = "") -> None:
    share = _share([rec.carries_source for rec in records])
    r.add("identity", f"share of faces carrying the source{where} ({len(records)})", share, f">= {SHARE_GOAL}",
          share >= SHARE_GOAL)
    for source in SOURCES:
        mine = [rec.carries_source for rec in records if rec.source == source]
        r.add("identity", f"  of them with {source}{where}", _share(mine), "(no goal)", True)
    distance = _median([rec.to_source for rec in records])
    r.add("identity", f"median distance to the source{where}", distance, "<= 0.48", distance <= 0.48)


def source_extras_figures(r: Results, records: list[FaceRecord]) -> None:
    """Nothing of the source but the face: its hair on the forehead, its glasses around the eyes."""
    for source in SOURCES:
        mine = [rec for rec in records if rec.source == source]
        kept = _share([abs(rec.forehead_change) <= FOREHEAD_GOAL for rec in mine])
        r.add("no source hair or glasses", f"forehead within {FOREHEAD_GOAL:g} grey levels, {source}", kept,
              f">= {SHARE_GOAL}", kept >= SHARE_GOAL)
        r.add("no source hair or glasses", f"  median forehead change, {source}",
              _median([rec.forehead_change for rec in mine]), "(no goal)", True)
    # Glasses: the dark pixels around the eyes that the glasses source adds beyond what the other source adds to
    # the same face (both bring their lashes, brows and lid lines; only one brings frames).
    other = {(rec.photo, rec.variant, rec.box): rec.new_dark_frames for rec in records if rec.source == FRINGE_SOURCE}
    excess = [rec.new_dark_frames - other[(rec.photo, rec.variant, rec.box)] for rec in records
              if rec.source == GLASSES_SOURCE and (rec.photo, rec.variant, rec.box) in other]
    clean = _share([e <= FRAMES_GOAL for e in excess])
    r.add("no source hair or glasses", f"no source frames: {GLASSES_SOURCE}'s dark pixels at the eyes within "
          f"{FRAMES_GOAL:g} of {FRINGE_SOURCE}'s", clean, f">= {SHARE_GOAL}", clean >= SHARE_GOAL)
    for source in SOURCES:
        r.add("no source hair or glasses", f"  median new dark share at the eyes, {source}",
              _median([rec.new_dark_frames for rec in records if rec.source == source]), "(no goal)", True)
    for source in SOURCES:  # light rims, wrinkles' and lids' highlights: the glasses source's beyond the other's
        r.add("no source hair or glasses", f"  median new light-line share at the eyes, {source}",
              _median([rec.new_light_lines for rec in records if rec.source == source]), "(no goal)", True)


def turned_figures(r: Results, records: list[FaceRecord]) -> None:
    upto = [rec for rec in records if abs(rec.yaw) <= TURNED_UP_TO]
    both = _share([max(rec.cheek_change) <= CHEEK_GOAL for rec in upto])
    r.add("turned faces", f"both cheeks' a*, b* within {CHEEK_GOAL:g} (|yaw| <= {TURNED_UP_TO:g}: {len(upto)})", both,
          f">= {SHARE_GOAL}", both >= SHARE_GOAL)
    turned = [rec for rec in upto if abs(rec.yaw) >= 20]
    far = _share([rec.cheek_change[rec.far_cheek] <= CHEEK_GOAL for rec in turned])
    r.add("turned faces", f"far cheek's a*, b* within {CHEEK_GOAL:g} (|yaw| 20-{TURNED_UP_TO:g}: {len(turned)})", far,
          f">= {SHARE_GOAL}", far >= SHARE_GOAL)
    r.add("turned faces", "  median far-cheek detail, output / target (|yaw| >= 20)",
          _median([rec.far_cheek_detail for rec in turned]), "(no goal)", True)


def edge_figures(r: Results, records: list[FaceRecord]) -> None:
    within = _share([1 / EDGE_GOAL <= rec.edge_ratio <= EDGE_GOAL for rec in records])
    r.add("no paste edge", f"paste-edge gradient within {EDGE_GOAL:g}x of the target's", within, f">= {SHARE_GOAL}",
          within >= SHARE_GOAL)
    r.add("no paste edge", "  median paste-edge gradient ratio", _median([rec.edge_ratio for rec in records]),
          "(no goal)", True)
    r.add("no paste edge", f"  median over the outline ({fm.EDGE_OUTSIDE:g} face heights either side)",
          _median([rec.edge_outline for rec in records]), "(no goal)", True)
    r.add("no paste edge", f"  median over the face's ring inside it ({fm.EDGE_OUTSIDE:g}-{fm.EDGE_INSIDE:g} in)",
          _median([rec.edge_ring for rec in records]), "(no goal)", True)


def figures(records: list[FaceRecord], live: list[FaceRecord]) -> Results:
    r = Results()
    expression_figures(r, records)
    identity_figures(r, records)
    identity_figures(r, live, f" at {LIVE_FACE_PX} px, JPEG {LIVE_JPEG}")
    source_extras_figures(r, records)
    turned_figures(r, records)
    edge_figures(r, records)
    return r


def _record_json(rec: FaceRecord) -> dict[str, object]:
    return {**asdict(rec), "carries_source": rec.carries_source}


def run(photos: str = "development", json_path: Path | None = None, crops: Path | None = None,
        crop_format: str = "jpg", notify: Callable[[str], None] = lambda message: None) -> Results | None:
    """Fetch the photos, swap and judge, print the table; None (with the reason printed) when the photos or the
    judge cannot be had here."""
    import sys

    photo_set = PHOTO_SETS[photos]
    try:
        paths = fetch(photo_set)
        judge = FaceJudge()
    except (PhotosUnavailable, JudgeUnavailable) as exc:
        print(f"real photos: skipped: {exc}", file=sys.stderr)
        return None
    swap = Swapper()
    try:
        bench = RealPhotoBench(judge, swap, load_photos(), notify)
        records, live = bench.run(paths)
    finally:
        swap.close()
    results = figures(records, live)
    print(f"real photos ({photos}: {', '.join(p.name for p in paths)} of {photo_set.package}, {photo_set.licence}; "
          f"{len(records)} face swaps, {len(live)} at live size)")
    print(results.markdown(first_column="goal"))
    if json_path is not None:
        json_path.write_text(json.dumps({
            "photos": photos, "package": photo_set.package,
            "figures": [asdict(f) for f in results.figures],
            "faces": [_record_json(rec) for rec in records], "live_size": [_record_json(rec) for rec in live]},
            indent=1))
    if crops is not None:
        for path in write_crops(bench.readme_crops(), crops, "." + crop_format):
            print(f"wrote {path}")
    return results

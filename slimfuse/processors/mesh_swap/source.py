"""Source preparation: the source face cut out once, with its pyramid and magnified copies, and, for each target face,
the source at that face's scale with its mesh there (both made once per scale, then kept on the SourceFace)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from slimfuse.models.mesh_topology import NUM_LANDMARKS
from slimfuse.processors.mesh_swap.mesh import SwapMesh, checked_landmarks, doubled_areas, face_extent

SOURCE_MARGIN = 0.25  # the cut-out reaches this far (of the face's extent, and 4 px more) past the landmarks
SMALLEST_LEVEL_FACE = 48  # the pyramid halves the source while its face stays at least this many pixels


@dataclass(frozen=True)
class SourceMesh:
    """The source mesh at one scale: what every target face swapped from it reuses.

    triangles: the swapper's triangles it was made for; vertices: (V + 3, 3) float32, the hole centres appended;
    corners: (T, 3, 2) float64, each triangle's corners; areas: (T,) twice each triangle's signed area;
    mouth_closed: whether the source's mouth is closed."""

    triangles: np.ndarray
    vertices: np.ndarray
    corners: np.ndarray
    areas: np.ndarray
    mouth_closed: bool


@dataclass(frozen=True, eq=False)
class SourceFace:
    """One source identity, prepared once and reused for every target face and frame.

    image: RGB uint8 crop holding the source face; landmarks: (468, 3) float32 in that crop's pixels.
    levels: the image and its pyrDown halvings (level k has landmarks * 0.5**k), filled in automatically.
    face_size: the landmarks' bounding-box side in pixels, filled in automatically.
    eye_openings: each eye's opening by the iris model (eyes.EYE_CONTOURS order), or None if not measured.
    usable: float32 map of the image, 1 where its pixels may be used and 0 on hair, a hat or frames
    (source_skin.py, made by `MeshSwapper.prepare_source` for its options), or None (all of it); usable_levels: its
    pyramid, filled in automatically. hair_shadow: float32 map of the image, 1 on the skin in the shadow of the
    hair or hat not used (source_skin.py), or None; hair_shadow_levels: its pyramid, the same way."""

    image: np.ndarray
    landmarks: np.ndarray
    levels: tuple[np.ndarray, ...] = field(default=(), repr=False)
    face_size: float = 0.0
    eye_openings: tuple[float, float] | None = None
    usable: np.ndarray | None = field(default=None, repr=False)
    usable_levels: tuple[np.ndarray, ...] = field(default=(), repr=False)
    hair_shadow: np.ndarray | None = field(default=None, repr=False)
    hair_shadow_levels: tuple[np.ndarray, ...] = field(default=(), repr=False)
    # Made on first use and kept: the magnified images by (factor, sharpen), the meshes by `source_mesh`'s key.
    _upsampled: dict[tuple[int, float], np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _meshes: dict[tuple[float, int, int], SourceMesh] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        image = np.asarray(self.image)
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError("SourceFace.image must be an RGB uint8 HxWx3 array")
        landmarks = np.asarray(self.landmarks, dtype=np.float32)
        if landmarks.ndim != 2 or landmarks.shape[0] < NUM_LANDMARKS or landmarks.shape[1] != 3:
            raise ValueError(f"SourceFace.landmarks must be ({NUM_LANDMARKS}, 3)")
        landmarks = np.ascontiguousarray(landmarks[:NUM_LANDMARKS])
        image = np.ascontiguousarray(image)
        image.setflags(write=False)
        landmarks.setflags(write=False)
        object.__setattr__(self, "image", image)
        object.__setattr__(self, "landmarks", landmarks)
        size = face_extent(landmarks)
        object.__setattr__(self, "face_size", size)
        if not self.levels:
            object.__setattr__(self, "levels", _pyramid(image, size))
        for name in ("usable", "hair_shadow"):
            if getattr(self, name) is not None:
                levels = _map_levels(getattr(self, name), image.shape[:2], len(self.levels), name)
                object.__setattr__(self, name, levels[0])
                object.__setattr__(self, f"{name}_levels", levels)

    @staticmethod
    def magnified(ratio: float) -> int:
        """The upsampling factor (1, 2 or 4) for a target face `ratio` times the source face's size."""
        return 1 if ratio < 1.3 else 2 if ratio < 2.6 else 4

    def upsampled(self, factor: int, sharpen: float = 0.0) -> np.ndarray:
        """The source image magnified `factor` times with Lanczos, then unsharp-masked by `sharpen` at the source's
        own pixel scale (made once, then cached); pixel centres map as x' = (x + 0.5) * factor - 0.5."""
        key = (factor, sharpen)
        if key not in self._upsampled:
            height, width = self.image.shape[:2]
            big = cv2.resize(self.image, (width * factor, height * factor), interpolation=cv2.INTER_LANCZOS4)
            if sharpen > 0:
                values = big.astype(np.float32)
                values += np.float32(sharpen) * (values - cv2.GaussianBlur(values, (0, 0), 0.5 * factor))
                big = np.clip(np.rint(values), 0, 255).astype(np.uint8)
            big.setflags(write=False)
            self._upsampled[key] = big
        return self._upsampled[key]


def _map_levels(values: np.ndarray, shape: tuple[int, ...], count: int, name: str) -> tuple[np.ndarray, ...]:
    """A float32 map of the source image (of `shape`) and its pyrDown halvings, `count` in all, as the image's
    levels (read-only)."""
    levels = [np.ascontiguousarray(values, dtype=np.float32)]
    if levels[0].shape != shape:
        raise ValueError(f"SourceFace.{name} must have the image's height and width")
    while len(levels) < count:
        levels.append(cv2.pyrDown(levels[-1]))
    for level in levels:
        level.setflags(write=False)
    return tuple(levels)


def _pyramid(image: np.ndarray, face_size: float) -> tuple[np.ndarray, ...]:
    """`image` and its pyrDown halvings while the face stays at least SMALLEST_LEVEL_FACE pixels (read-only)."""
    levels = [image]
    while face_size / 2 ** len(levels) >= SMALLEST_LEVEL_FACE and min(levels[-1].shape[:2]) >= 16:
        levels.append(cv2.pyrDown(levels[-1]))
    for level in levels:
        level.setflags(write=False)
    return tuple(levels)


def cut_out_source(image: np.ndarray, landmarks: np.ndarray, max_face: int) -> tuple[np.ndarray, np.ndarray]:
    """The source face with a margin, on whole pixels of `image` (a copy), scaled down (INTER_AREA) when the face is
    larger than `max_face` pixels; and its landmarks in the cut-out's pixels. image: RGB uint8; landmarks: (468, 3)."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError("source image must be an RGB uint8 HxWx3 array")
    points = checked_landmarks(landmarks)
    low, high = points[:, :2].min(0), points[:, :2].max(0)
    size = face_extent(points)
    margin = SOURCE_MARGIN * size + 4
    height, width = image.shape[:2]
    left, top = max(int(math.floor(low[0] - margin)), 0), max(int(math.floor(low[1] - margin)), 0)
    right = min(int(math.ceil(high[0] + margin)) + 1, width)
    bottom = min(int(math.ceil(high[1] + margin)) + 1, height)
    if right - left < 2 or bottom - top < 2:
        raise ValueError("source landmarks lie outside the source image")
    local = points.copy()
    local[:, 0] -= left
    local[:, 1] -= top
    crop = image[top:bottom, left:right]
    scale = min(1.0, max_face / size)
    if scale < 1.0:
        crop, local = _scaled_down(crop, local, scale)
    return np.array(crop), local


def _scaled_down(crop: np.ndarray, landmarks: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """`crop` resized by `scale` (INTER_AREA), and `landmarks` (changed in place) moved along."""
    height, width = crop.shape[:2]
    new_width, new_height = max(1, int(round(width * scale))), max(1, int(round(height * scale)))
    scale_x, scale_y = new_width / width, new_height / height
    # INTER_AREA keeps pixel-centre alignment: x' = (x + 0.5) * s - 0.5
    landmarks[:, 0] = (landmarks[:, 0] + 0.5) * scale_x - 0.5
    landmarks[:, 1] = (landmarks[:, 1] + 0.5) * scale_y - 0.5
    landmarks[:, 2] *= (scale_x + scale_y) / 2
    return cv2.resize(crop, (new_width, new_height), interpolation=cv2.INTER_AREA), landmarks


@dataclass(frozen=True, eq=False)
class ScaledSource:
    """The source as one target face samples it. ratio: the target face's size over the source face's; level: the
    pyramid level used (one close to, not below, the target's scale); magnification: how many times a source face
    smaller than the target's is magnified (1, 2 or 4; level 0); image: that level or magnified copy; mesh: the
    source's mesh there; usable, hair_shadow: the source's maps at that level (not magnified), or None."""

    ratio: float
    level: int
    magnification: int
    image: np.ndarray
    mesh: SourceMesh
    usable: np.ndarray | None = None
    hair_shadow: np.ndarray | None = None

    @property
    def level_ratio(self) -> float:
        """The target face's size over the source face's at the level used (before magnification)."""
        return self.ratio * 2.0**self.level

    @property
    def area_ratio(self) -> float:
        """How much larger, in area, the target face is than the source face in `image`."""
        return (self.level_ratio / self.magnification) ** 2


def scaled_source(source: SourceFace, target_landmarks: np.ndarray, mesh: SwapMesh, sharpen: float,
                  closed_mouth: float) -> ScaledSource:
    """The source at the scale of the target face with `target_landmarks`: a magnified source is sharpened by
    `sharpen` (see SourceFace.upsampled); its mouth is closed under `closed_mouth` of its size."""
    ratio = face_extent(target_landmarks) / max(source.face_size, 1.0)
    level = 0 if ratio >= 1.0 else int(min(math.floor(math.log2(1.0 / ratio)), len(source.levels) - 1))
    magnification = source.magnified(ratio) if level == 0 else 1
    image = source.upsampled(magnification, sharpen) if magnification > 1 else source.levels[level]
    return ScaledSource(ratio=ratio, level=level, magnification=magnification, image=image,
                        mesh=source_mesh(source, mesh, level, magnification, closed_mouth),
                        usable=source.usable_levels[level] if source.usable_levels else None,
                        hair_shadow=source.hair_shadow_levels[level] if source.hair_shadow_levels else None)


def source_mesh(source: SourceFace, mesh: SwapMesh, level: int, magnification: int, closed_mouth: float) -> SourceMesh:
    """The source's mesh at pyramid `level` or magnified `magnification` times (made once per scale, then kept on
    the source; one made for another swapper's mesh is made again)."""
    key = (closed_mouth, level, magnification)
    known = source._meshes.get(key)
    if known is None or known.triangles is not mesh.triangles:
        if magnification > 1:
            landmarks = (source.landmarks + np.float32(0.5)) * np.float32(magnification) - np.float32(0.5)
            landmarks[:, 2] = source.landmarks[:, 2] * np.float32(magnification)
        else:
            landmarks = source.landmarks * np.float32(0.5**level)
        vertices = mesh.with_hole_centres(landmarks)
        corners = vertices[mesh.triangles, :2].astype(np.float64)
        areas = doubled_areas(corners)
        for shared in (vertices, corners, areas):  # read by every render thread
            shared.setflags(write=False)
        mouth_closed = mesh.mouth_closed(landmarks, mesh.face_frame(landmarks), closed_mouth)
        source._meshes[key] = SourceMesh(triangles=mesh.triangles, vertices=vertices, corners=corners, areas=areas,
                                         mouth_closed=mouth_closed)
    return source._meshes[key]

"""Shape transfer, part of the geometry: the target's inner features (eyes, brows, nose, lip outline) move part of
the way toward the source's proportions, measured after a 3-D similarity alignment of the two meshes so head pose is
not mistaken for shape. Texture alone leaves the target's feature layout, which the identity embedding weighs
heavily. The shift is 0 on the face outline and on a kept mouth or kept eyes, fades out with the mask, and moves the
target pixels under the feathered edge along with the face, so nothing ghosts."""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from slimfuse.config import SwapOptions
from slimfuse.processors.mesh_masks import smoothstep
from slimfuse.processors.mesh_swap.eyes import EYE_CONTOURS
from slimfuse.processors.mesh_swap.geometry import per_pixel_affine, remapped_maps
from slimfuse.processors.mesh_swap.mesh import SwapMesh
from slimfuse.processors.mesh_swap.tuning import MeshTuning

UNREACHABLE = 1e9  # the hop count of a vertex no mesh edge leads to from a ring


@dataclass(frozen=True, eq=False)
class ShapeTransfer:
    """The per-vertex shift of a target mesh toward a source's proportions. weight: (V,) float64, 0 on the outline
    growing to 1 over `shape_rings` mesh rings inward, pinned to 0 on a kept mouth (and its ring of neighbours) and
    on kept eyes; weight_lips_kept: the same, 0 on the lips too (a closed target mouth under an open source one)."""

    mesh: SwapMesh
    weight: np.ndarray
    weight_lips_kept: np.ndarray
    tuning: MeshTuning

    @classmethod
    def of(cls, mesh: SwapMesh, options: SwapOptions, tuning: MeshTuning) -> ShapeTransfer:
        neighbours = vertex_neighbours(mesh.surface, mesh.num_vertices)

        def near(ring: str, rings: float) -> np.ndarray:
            """0 on the ring, rising to 1 `rings` mesh rings away from it."""
            return smoothstep(ring_distance(neighbours, mesh.rings[ring]) / rings)

        weight = near("oval", tuning.shape_rings)
        if options.keep_mouth:
            weight = np.minimum(weight, near("lips_inner", 2))
        if options.keep_eyes:
            for eye in ("left_eye", "right_eye"):
                weight = np.minimum(weight, near(eye, 2))
        lips_kept = np.minimum(weight, near("lips_outer", 2))
        return cls(mesh, weight.astype(np.float64), lips_kept.astype(np.float64), tuning)

    def vertex_shift(self, target_vertices: np.ndarray, source_vertices: np.ndarray, size: float,
                     keep_lips: bool, held_eyes: tuple[str, ...] = ()) -> np.ndarray:
        """(V + 3, 2) float32 shift of each target vertex (hole centres last): shape_transfer * weight * (aligned
        source - target), each at most `max_shape_shift` of the face `size`. The lids of `held_eyes` move with
        their corners only, so those eyes keep the target's opening."""
        count = self.mesh.num_vertices
        source = source_vertices[:count].astype(np.float64)
        target = target_vertices[:count].astype(np.float64)
        aligned = similarity_align(source, target)
        weight = self.weight_lips_kept if keep_lips and self.tuning.pin_closed_lips else self.weight
        shift = (aligned[:, :2] - target[:, :2]) * (self.tuning.shape_transfer * weight)[:, None]
        limit = self.tuning.max_shape_shift * size
        length = np.hypot(shift[:, 0], shift[:, 1])
        shift *= np.minimum(1.0, limit / np.maximum(length, 1e-9))[:, None]
        for eye in held_eyes:
            lids_with_corners(shift, target[:, :2], EYE_CONTOURS[eye])
        return np.concatenate([shift, np.asarray(self.mesh.hole_centres(shift))], axis=0).astype(np.float32)


@dataclass(frozen=True, eq=False)
class SamplePoints:
    """Where each pixel of the region looks on the target mesh: (x, y), float32 images; a pixel whose `moved` is
    false looks at itself (any_moved: whether any pixel moved)."""

    x: np.ndarray
    y: np.ndarray
    moved: np.ndarray
    any_moved: bool

    def triangle_ids(self, triangle_ids: np.ndarray) -> np.ndarray:
        """The triangle-id image at the nearest whole pixel of each point."""
        rows, columns = triangle_ids.shape
        return triangle_ids[np.clip(np.rint(self.y), 0, rows - 1).astype(np.intp),
                            np.clip(np.rint(self.x), 0, columns - 1).astype(np.intp)]

    def resampled(self, *maps: np.ndarray) -> tuple[np.ndarray, ...]:
        """float32 `maps` of the region at the points (geometry.remapped_maps); unmoved pixels sample their own
        whole-pixel position, so the remap copies them exactly."""
        return remapped_maps(list(maps), self.x, self.y)


def sample_points(to_shift: np.ndarray | None, triangle_ids: np.ndarray, outer: np.ndarray) -> SamplePoints:
    """Where each output pixel looks on the target mesh: itself, or (shape transfer: `to_shift`, the shift's affine
    table) the point the smooth shift field moves onto it. The shift fades out with the `outer` mask, so nothing moves
    where the alpha is 0, and is pinned (exactly 0) on a kept mouth or kept eyes."""
    rows, columns = triangle_ids.shape
    grid_x = np.broadcast_to(np.arange(columns, dtype=np.float32)[None, :], (rows, columns))
    grid_y = np.broadcast_to(np.arange(rows, dtype=np.float32)[:, None], (rows, columns))
    if to_shift is None:
        return SamplePoints(grid_x, grid_y, np.zeros((rows, columns), dtype=bool), False)
    triangle_moves = np.concatenate([[False], np.abs(to_shift[1:]).max(axis=1) > 1e-6])
    moved = np.take(triangle_moves, triangle_ids) & (outer > 0)
    if not moved.any():
        return SamplePoints(grid_x, grid_y, moved, False)
    shift = cv2.merge([part * outer for part in per_pixel_affine(to_shift, triangle_ids, grid_x, grid_y)])
    # Backward map x -> x - s(x - s(x)): one fixed-point step of inverting x -> x + s(x).
    first = cv2.remap(shift, grid_x - shift[..., 0], grid_y - shift[..., 1], cv2.INTER_LINEAR,
                      borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    x = np.where(moved, grid_x - first[..., 0], grid_x).astype(np.float32)
    y = np.where(moved, grid_y - first[..., 1], grid_y).astype(np.float32)
    return SamplePoints(x, y, moved, True)


def lids_with_corners(shift: np.ndarray, target: np.ndarray, contour: tuple[int, ...]) -> None:
    """Set (in place) the shift of each point of an eye's `contour` (EYE_CONTOURS order) to its corners' shifts,
    interpolated by where the point lies between them on the `target` (V, 2)."""
    points = np.asarray(contour)
    outer, inner = target[points[0]], target[points[8]]
    axis = inner - outer
    along = np.clip((target[points] - outer) @ axis / max(float(axis @ axis), 1e-9), 0.0, 1.0)[:, None]
    shift[points] = (1.0 - along) * shift[points[0]] + along * shift[points[8]]


def vertex_neighbours(triangles: np.ndarray, num_vertices: int) -> list[set[int]]:
    """Each vertex's neighbours along the triangles' edges."""
    neighbours: list[set[int]] = [set() for _ in range(num_vertices)]
    for first, second, third in triangles.tolist():
        neighbours[first].update((second, third))
        neighbours[second].update((first, third))
        neighbours[third].update((first, second))
    return neighbours


def ring_distance(neighbours: list[set[int]], ring: np.ndarray) -> np.ndarray:
    """Mesh-edge hops from each vertex to the nearest vertex of `ring` (float; UNREACHABLE where none leads)."""
    distance = np.full(len(neighbours), UNREACHABLE)
    frontier = [int(vertex) for vertex in ring]
    distance[frontier] = 0
    hops = 0
    while frontier:
        hops += 1
        reached = []
        for vertex in frontier:
            for neighbour in neighbours[vertex]:
                if distance[neighbour] > hops:
                    distance[neighbour] = hops
                    reached.append(neighbour)
        frontier = reached
    return distance


def similarity_align(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """`source` (N, 3) moved by the least-squares similarity (Umeyama: rotation, uniform scale, translation)
    that best maps it onto `target` (N, 3)."""
    source_mean, target_mean = source.mean(0), target.mean(0)
    source_centred, target_centred = source - source_mean, target - target_mean
    left, singular, right = np.linalg.svd(target_centred.T @ source_centred / len(source))
    reflection = np.eye(3)
    reflection[2, 2] = np.sign(np.linalg.det(left @ right)) or 1.0
    rotation = left @ reflection @ right
    variance = (source_centred * source_centred).sum() / len(source)
    scale = float((singular * np.diag(reflection)).sum() / max(variance, 1e-12))
    return scale * source_centred @ rotation.T + target_mean

"""The mesh both faces are drawn with: MediaPipe's triangles plus fans that close the eye and mouth holes, its named
rings, and the measures every stage takes of a face's landmarks (extent, frame, hole centres, mouth opening)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from slimfuse.models.mesh_topology import NUM_LANDMARKS, MeshTopology
from slimfuse.processors import mesh_masks as mask_ops

HOLES = ("left_eye", "right_eye", "lips_inner")
"""The rings closed by a fan of triangles around a virtual vertex at their centroid (vertices V, V + 1, V + 2)."""


@dataclass(frozen=True, eq=False)
class SwapMesh:
    """num_vertices: the landmarks' count V; surface: the topology's triangles (int64); triangles: those and the hole
    fans after them (int64, what is drawn); rings: each named ring's vertex indices (int64)."""

    num_vertices: int
    surface: np.ndarray
    triangles: np.ndarray
    rings: Mapping[str, np.ndarray]

    @classmethod
    def of(cls, topology: MeshTopology) -> SwapMesh:
        rings = {name: np.asarray(indices, dtype=np.int64) for name, indices in (
            ("oval", topology.face_oval), ("lips_outer", topology.lips_outer), ("lips_inner", topology.lips_inner),
            ("left_eye", topology.left_eye), ("right_eye", topology.right_eye))}
        count = topology.num_vertices
        # The rings run in the triangles' sense, so (centre, r_i, r_i+1) has it too.
        fans = [(count + hole, int(ring[position]), int(ring[(position + 1) % len(ring)]))
                for hole, ring in enumerate(rings[name] for name in HOLES) for position in range(len(ring))]
        surface = np.asarray(topology.triangles, np.int64)
        triangles = np.concatenate([surface, np.asarray(fans, np.int64)])
        return cls(num_vertices=count, surface=surface, triangles=triangles, rings=MappingProxyType(rings))

    def ring_points(self, vertices: np.ndarray, name: str) -> np.ndarray:
        """The (x, y) of the ring `name` among `vertices`."""
        return vertices[self.rings[name], :2]

    def hole_centres(self, values: np.ndarray) -> list[np.ndarray]:
        """Each hole ring's mean of the per-vertex `values` (positions, shifts), in the order of HOLES."""
        return [values[self.rings[name]].mean(0) for name in HOLES]

    def with_hole_centres(self, landmarks: np.ndarray) -> np.ndarray:
        """(V + 3, 3) float32: the landmarks, then the hole centres: the vertices the triangles index."""
        centres = np.asarray(self.hole_centres(landmarks), dtype=np.float32)
        return np.concatenate([landmarks, centres], axis=0).astype(np.float32)

    def face_frame(self, landmarks: np.ndarray) -> mask_ops.FaceFrame:
        rings = self.rings
        return mask_ops.face_frame(landmarks, rings["oval"], rings["left_eye"], rings["right_eye"], rings["lips_inner"])

    def mouth_closed(self, landmarks: np.ndarray, frame: mask_ops.FaceFrame, closed_mouth: float) -> bool:
        """Whether the inner-lip opening is under `closed_mouth` of the face's size."""
        return ring_opening(self.ring_points(landmarks, "lips_inner"), frame.down) < closed_mouth * frame.size


def checked_landmarks(landmarks: np.ndarray) -> np.ndarray:
    """The (468, 3) float32 x, y, z in pixels of `landmarks` (more rows are cut off); ValueError if it is not that."""
    points = np.asarray(landmarks, dtype=np.float32)
    if points.ndim != 2 or points.shape[0] < NUM_LANDMARKS or points.shape[1] != 3:
        raise ValueError(f"landmarks must be ({NUM_LANDMARKS}, 3) x, y, z in pixels")
    points = points[:NUM_LANDMARKS]
    if not np.isfinite(points).all():
        raise ValueError("landmarks contain NaN or infinity")
    return points


def face_extent(landmarks: np.ndarray) -> float:
    """The landmarks' bounding-box side in pixels (the larger one, at least 1)."""
    span = landmarks[:, :2].max(0) - landmarks[:, :2].min(0)
    return float(max(span.max(), 1.0))


def ring_opening(ring: np.ndarray, down: np.ndarray) -> float:
    """Mean height of a ring polygon across its long axis: area / extent along `down`'s normal."""
    points = np.asarray(ring, dtype=np.float64)[:, :2]
    area = 0.5 * abs(float(np.sum(points[:, 0] * np.roll(points[:, 1], -1) - np.roll(points[:, 0], -1) * points[:, 1])))
    across = points @ np.array([-float(down[1]), float(down[0])])
    return area / max(float(across.max() - across.min()), 1.0)


def doubled_areas(corners: np.ndarray) -> np.ndarray:
    """Twice each triangle's signed area, from its corners (T, 3, >= 2): > 0 where the triangle faces the camera
    (the mesh's triangles all wind one way), < 0 where it faces away."""
    first, second = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    return first[:, 0] * second[:, 1] - first[:, 1] * second[:, 0]

"""The FaceMesh topology rebuilt from MediaPipe's published edge sets (the real connections file)."""
from __future__ import annotations

import ast
import hashlib
from collections import Counter

import numpy as np
import pytest

from slimfuse.models.store import Store
from slimfuse.models.mesh_topology import MeshTopology, build_topology, parse_connections

# sha256 of MeshTopology.to_json() for the connections file of the pinned mediapipe wheel.
PINNED_SHA256 = "8c8ec79df07b427eeee01330b9633a8ba3cce98def7e2301e4a0ea4427737bf5"


@pytest.fixture(scope="module")
def source(store: Store) -> str:
    """The real face_mesh_connections.py, as the model store took it from the pinned mediapipe wheel."""
    return store.source_path("face_mesh_topology").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def topo(source: str) -> MeshTopology:
    return build_topology(source)


def _undirected(tris: np.ndarray) -> Counter:
    c: Counter = Counter()
    for a, b, d in tris.tolist():
        for u, v in ((a, b), (b, d), (d, a)):
            c[(min(u, v), max(u, v))] += 1
    return c


def test_triangle_count_and_dtype(topo: MeshTopology) -> None:
    assert topo.triangles.dtype == np.int32
    assert topo.triangles.shape == (852, 3)
    assert topo.num_vertices == 468
    assert set(np.unique(topo.triangles).tolist()) == set(range(468))
    # no repeated vertex inside a triangle, no duplicate triangle
    assert all(len(set(t)) == 3 for t in topo.triangles.tolist())
    assert len({frozenset(t) for t in topo.triangles.tolist()}) == len(topo.triangles)


def test_manifold_and_covers_every_edge(topo: MeshTopology, source: str) -> None:
    counts = _undirected(topo.triangles)
    assert max(counts.values()) == 2
    tess = {(min(a, b), max(a, b)) for a, b in parse_connections(source)["FACEMESH_TESSELATION"]}
    assert set(counts) == tess  # every published edge is a triangle edge, and no other edge appears
    # vertex manifold: the triangles around each vertex form a single fan
    for v in range(topo.num_vertices):
        fan = [tuple(t) for t in topo.triangles.tolist() if v in t]
        seen, stack = {fan[0]}, [fan[0]]
        while stack:
            t = stack.pop()
            for u in fan:
                if u not in seen and len(set(t) & set(u)) == 2:
                    seen.add(u)
                    stack.append(u)
        assert len(seen) == len(fan), v


def test_orientation_consistent(topo: MeshTopology) -> None:
    directed: Counter = Counter()
    for a, b, c in topo.triangles.tolist():
        for e in ((a, b), (b, c), (c, a)):
            directed[e] += 1
    assert max(directed.values()) == 1  # an edge is never traversed twice in the same direction
    boundary = [e for e in directed if (e[1], e[0]) not in directed]
    # Euler characteristic of a disc with three holes (the eyes and the mouth): V - E + F = 2 - 4
    edges = len(_undirected(topo.triangles))
    assert topo.num_vertices - edges + len(topo.triangles) == -2
    ring_edges = set()
    for ring in (topo.face_oval, topo.lips_inner, topo.left_eye, topo.right_eye):
        ring_edges |= {(min(ring[i], ring[i - 1]), max(ring[i], ring[i - 1])) for i in range(len(ring))}
    assert {(min(a, b), max(a, b)) for a, b in boundary} == ring_edges
    # the outer boundary runs with the oval's order, a hole's boundary against its ring's order
    oval = topo.face_oval
    assert all((oval[i - 1], oval[i]) in directed for i in range(len(oval)))
    for ring in (topo.lips_inner, topo.left_eye, topo.right_eye):
        assert all((ring[i], ring[i - 1]) in directed for i in range(len(ring)))


def test_rings_match_published_contours(topo: MeshTopology, source: str) -> None:
    sets = parse_connections(source)

    def ring_edges(ring: tuple[int, ...]) -> set[tuple[int, int]]:
        return {(min(ring[i], ring[i - 1]), max(ring[i], ring[i - 1])) for i in range(len(ring))}

    def published(name: str) -> set[tuple[int, int]]:
        return {(min(a, b), max(a, b)) for a, b in sets[name]}

    assert ring_edges(topo.face_oval) == published("FACEMESH_FACE_OVAL")
    assert ring_edges(topo.left_eye) == published("FACEMESH_LEFT_EYE")
    assert ring_edges(topo.right_eye) == published("FACEMESH_RIGHT_EYE")
    assert ring_edges(topo.lips_inner) | ring_edges(topo.lips_outer) == published("FACEMESH_LIPS")
    assert {13, 14, 78, 308} <= set(topo.lips_inner) and {0, 17, 61, 291} <= set(topo.lips_outer)
    assert topo.face_oval[:2] == (10, 338)  # starts at its smallest index; runs toward the subject's left
    for ring in (topo.face_oval, topo.lips_outer, topo.lips_inner, topo.left_eye, topo.right_eye):
        assert ring[0] == min(ring) and len(set(ring)) == len(ring)


def test_json_round_trip_and_deterministic(topo: MeshTopology, source: str) -> None:
    text = topo.to_json()
    back = MeshTopology.from_json(text)
    assert back == topo
    assert back.to_json() == text
    assert np.array_equal(back.triangles, topo.triangles)
    assert build_topology(source).to_json() == text
    assert hashlib.sha256(text.encode()).hexdigest() == topo.sha256() == PINNED_SHA256
    with pytest.raises(ValueError):
        topo.triangles[0, 0] = 1  # read-only


def test_parsing_never_executes_the_source(source: str) -> None:
    hostile = "raise SystemExit('executed!')\nimport os\nos.remove('/nonexistent')\n" + source
    assert build_topology(hostile).to_json() == build_topology(source).to_json()
    with pytest.raises(ValueError):
        build_topology("FACEMESH_TESSELATION = frozenset([(0, 1), (1, 2), (2, 0)])\n")
    # a non-literal edge list is never evaluated
    tree = ast.parse("X = frozenset([(__import__('os').getpid(), 1)])")
    assert parse_connections(ast.unparse(tree)) == {}

"""The fixed topology of MediaPipe's 468-point FaceMesh: triangles and the ordered contour rings.

MediaPipe publishes the mesh only as edge sets (``face_mesh_connections.py`` in the mediapipe wheel).
`build_topology` reads that file's text with `ast` (nothing is imported or executed) and rebuilds:

* ``triangles``: every 3-clique of the FACEMESH_TESSELATION edge graph, less the few "phantom" cliques that
  are not faces (three real triangles around a vertex also close a 3-cycle of edges); the result is checked
  to be an edge- and vertex-manifold, connected and consistently oriented triangulation.
* the rings ``face_oval``, ``lips_outer``, ``lips_inner``, ``left_eye`` and ``right_eye``.

Orientation convention: a triangle ``(a, b, c)`` and every ring run clockwise on screen (positive shoelace
area in image coordinates, x right and y down) when the face is seen from the front, so in a target image a
triangle whose signed area is negative faces away from the camera. The sense is anchored on the face oval,
which runs from the forehead-top point 10 to 338 (subject's left, image right on an unmirrored photo).
Rings start at their smallest index. "left"/"right" are the subject's, as in MediaPipe.
"""
from __future__ import annotations

import ast
import hashlib
import json
from collections import defaultdict, deque
from dataclasses import dataclass
from collections.abc import Iterable

import numpy as np

NUM_LANDMARKS = 468
JSON_FORMAT = "slimfuse.mesh_topology/1"

# Forehead top (10) followed by its neighbour on the subject's left (338): the oval's on-screen clockwise sense.
_ORIENTATION_ANCHOR = (10, 338)

Edge = tuple[int, int]
Ring = tuple[int, ...]


@dataclass(frozen=True, eq=False)
class MeshTopology:
    """Triangles (N, 3) int32 (read-only) and ordered vertex rings; see the module docstring for conventions."""

    num_vertices: int
    triangles: np.ndarray
    face_oval: Ring
    lips_outer: Ring
    lips_inner: Ring
    left_eye: Ring
    right_eye: Ring

    def __post_init__(self) -> None:
        tris = np.array(self.triangles, dtype=np.int32).reshape(-1, 3)
        if tris.size and (tris.min() < 0 or tris.max() >= self.num_vertices):
            raise ValueError("triangle vertex index out of range")
        tris.setflags(write=False)
        object.__setattr__(self, "triangles", tris)
        for name in ("face_oval", "lips_outer", "lips_inner", "left_eye", "right_eye"):
            ring = tuple(int(i) for i in getattr(self, name))
            if len(ring) < 3 or any(not 0 <= i < self.num_vertices for i in ring):
                raise ValueError(f"{name}: a ring needs at least three vertex indices in range")
            object.__setattr__(self, name, ring)

    def to_json(self) -> str:
        """Deterministic JSON (sorted keys, canonical triangle order, no whitespace): hash it to pin it."""
        payload = {
            "format": JSON_FORMAT,
            "num_vertices": int(self.num_vertices),
            "triangles": _canonical_triangles(self.triangles).tolist(),
            "face_oval": list(self.face_oval),
            "lips_outer": list(self.lips_outer),
            "lips_inner": list(self.lips_inner),
            "left_eye": list(self.left_eye),
            "right_eye": list(self.right_eye),
        }
        return json.dumps(payload, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> MeshTopology:
        data = json.loads(text)
        if data.get("format") != JSON_FORMAT:
            raise ValueError(f"not a {JSON_FORMAT} document: format={data.get('format')!r}")
        return cls(
            num_vertices=int(data["num_vertices"]),
            triangles=np.asarray(data["triangles"], dtype=np.int32).reshape(-1, 3),
            face_oval=tuple(data["face_oval"]),
            lips_outer=tuple(data["lips_outer"]),
            lips_inner=tuple(data["lips_inner"]),
            left_eye=tuple(data["left_eye"]),
            right_eye=tuple(data["right_eye"]),
        )

    def sha256(self) -> str:
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MeshTopology):
            return NotImplemented
        return self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self.to_json())


def build_topology(connections_source: str) -> MeshTopology:
    """Build the topology from the text of MediaPipe's ``face_mesh_connections.py``."""
    sets = parse_connections(connections_source)
    for name in ("FACEMESH_TESSELATION", "FACEMESH_FACE_OVAL", "FACEMESH_LIPS", "FACEMESH_LEFT_EYE",
                 "FACEMESH_RIGHT_EYE"):
        if name not in sets:
            raise ValueError(f"connections source lacks {name}")
    edges = {_undirected(e) for e in sets["FACEMESH_TESSELATION"]}
    num_vertices = 1 + max(max(e) for e in edges)
    if num_vertices != NUM_LANDMARKS:
        raise ValueError(f"tessellation spans {num_vertices} vertices, expected {NUM_LANDMARKS}")

    triangles = _drop_phantom_cliques(_three_cliques(edges))
    _check_manifold(triangles, edges)
    oriented = _orient(triangles)
    boundary = _boundary_directed_edges(oriented)  # follows the triangles' sense

    oval_cycles = _cycles(sets["FACEMESH_FACE_OVAL"])
    if len(oval_cycles) != 1:
        raise ValueError("FACEMESH_FACE_OVAL is not a single ring")
    oval = oval_cycles[0]
    a, b = _ORIENTATION_ANCHOR
    if not _ring_has_step(oval, a, b) and not _ring_has_step(oval, b, a):
        raise ValueError(f"face oval lacks the orientation anchor edge {a}-{b}")
    if not _ring_has_step(oval, a, b):
        oval = _reverse_ring(oval)
    # The outer boundary runs with the triangles' sense; flip every triangle if the anchor says otherwise.
    if not all(_directed(oval[i], oval[(i + 1) % len(oval)]) in boundary for i in range(len(oval))):
        if not all(_directed(oval[(i + 1) % len(oval)], oval[i]) in boundary for i in range(len(oval))):
            raise ValueError("face oval is not the outer boundary of the tessellation")
        oriented = [(t[0], t[2], t[1]) for t in oriented]

    lips = _cycles(sets["FACEMESH_LIPS"])
    if len(lips) != 2:
        raise ValueError(f"FACEMESH_LIPS should hold two rings, found {len(lips)}")
    bset = {_undirected(e) for e in boundary}
    on_boundary = [all(_undirected((r[i], r[(i + 1) % len(r)])) in bset for i in range(len(r))) for r in lips]
    if sorted(on_boundary) != [False, True]:
        raise ValueError("cannot tell the inner lip ring (the mouth hole's boundary) from the outer one")
    lips_inner = lips[on_boundary.index(True)]
    lips_outer = lips[on_boundary.index(False)]
    rings = []
    for name in ("FACEMESH_LEFT_EYE", "FACEMESH_RIGHT_EYE"):
        cyc = _cycles(sets[name])
        if len(cyc) != 1:
            raise ValueError(f"{name} is not a single ring")
        rings.append(cyc[0])

    tri_array = _canonical_triangles(np.asarray(oriented, dtype=np.int32))
    directed = _boundary_directed_edges([tuple(t) for t in tri_array.tolist()])
    return MeshTopology(
        num_vertices=num_vertices,
        triangles=tri_array,
        face_oval=_canonical_ring(oval),
        lips_outer=_orient_ring_like(lips_outer, directed, tri_array, hole=False),
        lips_inner=_orient_ring_like(lips_inner, directed, tri_array, hole=True),
        left_eye=_orient_ring_like(rings[0], directed, tri_array, hole=True),
        right_eye=_orient_ring_like(rings[1], directed, tri_array, hole=True),
    )


def parse_connections(source: str) -> dict[str, list[Edge]]:
    """Top-level ``NAME = frozenset([(a, b), ...])`` assignments of the connections file, read with `ast` only."""
    tree = ast.parse(source)
    out: dict[str, list[Edge]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        call = node.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "frozenset"
                and len(call.args) == 1 and isinstance(call.args[0], (ast.List, ast.Tuple, ast.Set))):
            continue
        try:
            value = ast.literal_eval(call.args[0])
        except ValueError:
            continue
        edges: list[Edge] = []
        for item in value:
            if not (isinstance(item, tuple) and len(item) == 2 and all(type(v) is int and v >= 0 for v in item)):
                raise ValueError(f"{node.targets[0].id}: {item!r} is not an edge of two vertex indices")
            if item[0] == item[1]:
                raise ValueError(f"{node.targets[0].id}: self-loop {item!r}")
            edges.append((item[0], item[1]))
        out[node.targets[0].id] = edges
    return out


# ---------------------------------------------------------------------------------------------- helpers


def _undirected(e: Iterable[int]) -> Edge:
    a, b = e
    return (a, b) if a < b else (b, a)


def _directed(a: int, b: int) -> Edge:
    return (a, b)


def _tri_edges(t: tuple[int, int, int]) -> list[Edge]:
    return [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])]


def _three_cliques(edges: set[Edge]) -> list[tuple[int, int, int]]:
    adj: dict[int, set[int]] = defaultdict(set)
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    out = []
    for a in sorted(adj):
        for b in sorted(v for v in adj[a] if v > a):
            for c in sorted(v for v in adj[a] & adj[b] if v > b):
                out.append((a, b, c))
    return out


def _drop_phantom_cliques(cliques: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Remove 3-cycles that are not faces until no edge borders more than two triangles.

    A phantom clique is bounded by edges that each already border two real triangles, so all three of its
    edges are over-shared; a real triangle next to it has only one. Repeatedly drop the clique with the most
    over-shared edges (ties broken by index order, so the result is deterministic)."""
    alive = set(cliques)
    count: dict[Edge, int] = defaultdict(int)
    for t in cliques:
        for e in _tri_edges(t):
            count[_undirected(e)] += 1
    while True:
        over = {e for e, n in count.items() if n > 2}
        if not over:
            return sorted(alive)
        scored = [(sum(_undirected(e) in over for e in _tri_edges(t)), t) for t in alive
                  if any(_undirected(e) in over for e in _tri_edges(t))]
        best = max(s for s, _ in scored)
        if best < 2:
            raise ValueError("tessellation edges do not form a manifold triangulation")
        victim = min(t for s, t in scored if s == best)
        alive.remove(victim)
        for e in _tri_edges(victim):
            count[_undirected(e)] -= 1


def _check_manifold(triangles: list[tuple[int, int, int]], edges: set[Edge]) -> None:
    count: dict[Edge, int] = defaultdict(int)
    for t in triangles:
        for e in _tri_edges(t):
            count[_undirected(e)] += 1
    if set(count) != edges:
        raise ValueError("some tessellation edges border no triangle")
    if any(n > 2 for n in count.values()):
        raise ValueError("an edge borders more than two triangles")
    # Vertex manifold: the triangles around each vertex form one fan (connected through shared edges).
    around: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for t in triangles:
        for v in t:
            around[v].append(t)
    for v, fan in around.items():
        seen = {fan[0]}
        queue = deque([fan[0]])
        while queue:
            t = queue.popleft()
            for u in fan:
                if u not in seen and len(set(t) & set(u)) == 2:
                    seen.add(u)
                    queue.append(u)
        if len(seen) != len(fan):
            raise ValueError(f"vertex {v} is not a manifold vertex (its triangles form several fans)")


def _orient(triangles: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Give every triangle the same sense: neighbours traverse their shared edge in opposite directions."""
    by_edge: dict[Edge, list[int]] = defaultdict(list)
    for i, t in enumerate(triangles):
        for e in _tri_edges(t):
            by_edge[_undirected(e)].append(i)
    oriented: list[tuple[int, int, int] | None] = [None] * len(triangles)
    oriented[0] = triangles[0]
    queue = deque([0])
    while queue:
        i = queue.popleft()
        current = oriented[i]
        assert current is not None
        for a, b in _tri_edges(current):
            for j in by_edge[_undirected((a, b))]:
                if j == i:
                    continue
                u = triangles[j]
                # u must contain the edge as b -> a
                cand = u if (b, a) in _tri_edges(u) else (u[0], u[2], u[1])
                if oriented[j] is None:
                    oriented[j] = cand
                    queue.append(j)
                elif oriented[j] != cand:
                    raise ValueError("tessellation is not orientable")
    if any(t is None for t in oriented):
        raise ValueError("tessellation is not connected")
    return [t for t in oriented if t is not None]


def _boundary_directed_edges(triangles: list[tuple[int, int, int]]) -> set[Edge]:
    directed = {e for t in triangles for e in _tri_edges(t)}
    return {(a, b) for a, b in directed if (b, a) not in directed}


def _cycles(edges: list[Edge]) -> list[Ring]:
    """Split an edge set where every vertex has degree two into its cycles (start: smallest index)."""
    adj: dict[int, list[int]] = defaultdict(list)
    for a, b in {_undirected(e) for e in edges}:
        adj[a].append(b)
        adj[b].append(a)
    if any(len(n) != 2 for n in adj.values()):
        raise ValueError("contour edges do not form simple rings")
    seen: set[int] = set()
    rings = []
    for start in sorted(adj):
        if start in seen:
            continue
        ring = [start]
        seen.add(start)
        prev, cur = start, min(adj[start])
        while cur != start:
            ring.append(cur)
            seen.add(cur)
            nxt = adj[cur][0] if adj[cur][0] != prev else adj[cur][1]
            prev, cur = cur, nxt
        rings.append(tuple(ring))
    return rings


def _ring_has_step(ring: Ring, a: int, b: int) -> bool:
    n = len(ring)
    return any(ring[i] == a and ring[(i + 1) % n] == b for i in range(n))


def _reverse_ring(ring: Ring) -> Ring:
    return tuple(reversed(ring))


def _canonical_ring(ring: Ring) -> Ring:
    k = ring.index(min(ring))
    return tuple(ring[k:] + ring[:k])


def _orient_ring_like(ring: Ring, boundary: set[Edge], triangles: np.ndarray, hole: bool) -> Ring:
    """Give a ring the triangles' sense (clockwise on screen for a frontal face).

    A hole's boundary edges run against the polygon's own sense, the outer boundary's with it. A ring that is
    not a boundary (the outer lip line) takes the sense of the triangles inside it: a triangle of the mesh
    with two consecutive ring vertices a, b and its third vertex inside has the step a -> b."""
    n = len(ring)
    steps = [(ring[i], ring[(i + 1) % n]) for i in range(n)]
    if all(s in boundary for s in steps) or all((b, a) in boundary for a, b in steps):
        along = all(s in boundary for s in steps)
        forward = along != hole
    else:
        # Interior ring: count the directed steps shared with triangles whose third vertex lies on the
        # inner side. The inner side is the part that holds the mouth hole (vertices of lips_inner and the
        # vertices between). Use a flood fill on the mesh restricted by the ring.
        inside = _inside_vertices(ring, triangles)
        votes = 0
        ring_set = set(ring)
        for t in triangles.tolist():
            for k in range(3):
                a, b, c = t[k], t[(k + 1) % 3], t[(k + 2) % 3]
                if a in ring_set and b in ring_set and (c in inside):
                    if (a, b) in steps:
                        votes += 1
                    elif (b, a) in steps:
                        votes -= 1
        if votes == 0:
            raise ValueError("cannot orient an interior ring")
        forward = votes > 0
    return _canonical_ring(ring if forward else _reverse_ring(ring))


def _inside_vertices(ring: Ring, triangles: np.ndarray) -> set[int]:
    """Vertices the ring separates from the outer boundary (flood fill from the outer boundary)."""
    tris = [tuple(t) for t in triangles.tolist()]
    adj: dict[int, set[int]] = defaultdict(set)
    for t in tris:
        for a, b in _tri_edges(t):
            adj[a].add(b)
            adj[b].add(a)
    boundary = _boundary_directed_edges(tris)
    ring_set = set(ring)
    # The outer boundary is the boundary loop with the most vertices.
    loops = _cycles([_undirected(e) for e in boundary])
    outer = max(loops, key=len)
    seen = set(v for v in outer if v not in ring_set)
    queue = deque(seen)
    while queue:
        v = queue.popleft()
        for u in adj[v]:
            if u not in seen and u not in ring_set:
                seen.add(u)
                queue.append(u)
    return set(adj) - seen - ring_set


def _canonical_triangles(triangles: np.ndarray) -> np.ndarray:
    """Rotate each triangle to start at its smallest index (keeps its sense), then sort the rows."""
    t = np.asarray(triangles, dtype=np.int32).reshape(-1, 3)
    k = np.argmin(t, axis=1)
    rolled = np.stack([t[np.arange(len(t)), (k + j) % 3] for j in range(3)], axis=1)
    order = np.lexsort((rolled[:, 2], rolled[:, 1], rolled[:, 0]))
    return np.ascontiguousarray(rolled[order], dtype=np.int32)

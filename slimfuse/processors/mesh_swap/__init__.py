"""The landmark-mesh face swap (see swapper.py)."""
from __future__ import annotations

from slimfuse.processors.mesh_swap.swapper import MeshSwapper, MeshTuning, SourceFace, SwapLayers

__all__ = ["MeshSwapper", "MeshTuning", "SourceFace", "SwapLayers"]

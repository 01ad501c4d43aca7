"""The landmark-mesh face swap (see swapper.py)."""
from __future__ import annotations

from slimfuse.processors.mesh_swap.source import SourceFace
from slimfuse.processors.mesh_swap.swapper import MeshSwapper, SwapLayers
from slimfuse.processors.mesh_swap.tuning import MeshTuning

__all__ = ["MeshSwapper", "MeshTuning", "SourceFace", "SwapLayers"]

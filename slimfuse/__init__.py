"""slimfuse: swap and enhance faces in photos, videos and streams within the memory you have.

`from slimfuse import Swapper` (slimfuse.api); the package itself imports nothing heavy, so the command line
starts fast."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slimfuse.api import FaceInfo, Swapper

__all__ = ["FaceInfo", "Swapper"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from slimfuse import api

        return getattr(api, name)
    raise AttributeError(f"module 'slimfuse' has no attribute {name!r}")

"""Catalog entries: recognizers that users bring (none ship in a registry package; see the README)."""
from __future__ import annotations

from slimfuse.models.spec import ModelSpec

MODELS: tuple[ModelSpec, ...] = ()

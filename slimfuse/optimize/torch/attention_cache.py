"""Cached attention for video: successive frames of one face are alike, so an attention layer can reuse the keys
and values it computed for an earlier frame and compute only the queries of the current one.

A `FrameGate`, owned by the run, decides once per frame from a vector given with the frame (a head pose, a face
embedding): the cached keys and values are reused while the cosine similarity of the frame's vector to that of the
frame they were computed on exceeds the threshold (0.92) and that frame is fewer than `refresh_every` (5) frames
back; otherwise every attention layer recomputes them, and the frame's result is exactly the uncached one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import nn

THRESHOLD = 0.92
REFRESH_EVERY = 5


class SplitAttention(Protocol):
    """An attention layer in two halves (slimfuse.optimize.torch.attention.SelfAttention is one)."""

    def keys_values(self, x: torch.Tensor, position: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def attend(self, x: torch.Tensor, position: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor: ...


@dataclass
class FrameGate:
    """Per-frame decision shared by all cached layers of a model, and the counts for the run report."""

    threshold: float = THRESHOLD
    refresh_every: int = REFRESH_EVERY
    reuse: bool = False
    """The decision for the current frame."""
    reused_frames: int = 0
    refreshed_frames: int = 0
    _anchor: torch.Tensor | None = field(default=None, repr=False)
    _age: int = 0

    def next_frame(self, vector: torch.Tensor) -> bool:
        """Decide for the coming frame; True when its layers reuse the cached keys and values."""
        vector = vector.detach().flatten().double()
        similar = self._anchor is not None and float(
            torch.nn.functional.cosine_similarity(vector, self._anchor, dim=0)) > self.threshold
        self.reuse = similar and self._age + 1 < self.refresh_every
        if self.reuse:
            self._age += 1
            self.reused_frames += 1
        else:
            self._anchor, self._age = vector, 0
            self.refreshed_frames += 1
        return self.reuse


class CachedAttention(nn.Module):
    """Wraps an attention layer: keys and values come from its cache when the gate says so."""

    def __init__(self, attention: nn.Module, gate: FrameGate) -> None:
        super().__init__()
        self.attention = attention
        self.gate = gate
        self._cache: tuple[torch.Tensor, torch.Tensor] | None = None

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        attention: SplitAttention = self.attention  # type: ignore[assignment]
        if self.gate.reuse and self._cache is not None and self._cache[0].shape[0] == x.shape[0]:
            keys, values = self._cache
        else:
            keys, values = attention.keys_values(x, position)
            self._cache = (keys, values)
        return attention.attend(x, position, keys, values)


def cache_attention(model: nn.Module, threshold: float = THRESHOLD, refresh_every: int = REFRESH_EVERY) -> FrameGate:
    """Wrap every split attention layer of `model` (in place) behind one gate; call `gate.next_frame(vector)`
    before each frame."""
    gate = FrameGate(threshold, refresh_every)
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if hasattr(child, "keys_values") and hasattr(child, "attend"):
                setattr(parent, name, CachedAttention(child, gate))
    return gate

"""Multi-head self-attention split into its two halves, keys and values on one side and the attention of the
queries on the other, so that slimfuse.optimize.torch.attention_cache can reuse the first half across video frames."""
from __future__ import annotations

import torch
from torch import nn


class SelfAttention(nn.Module):
    """Self-attention over (batch, tokens, dim) with positions added to the queries and keys (not the values)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not a multiple of the {heads} heads")
        self.heads = heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.softmax = nn.Softmax(dim=-1)  # a module, so that precision.py can keep it in float32

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        return x.reshape(batch, tokens, self.heads, dim // self.heads).transpose(1, 2)

    def keys_values(self, x: torch.Tensor, position: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self._split(self.key(x + position)), self._split(self.value(x))

    def attend(self, x: torch.Tensor, position: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        queries = self._split(self.query(x + position))
        scores = queries @ keys.transpose(-2, -1) * queries.shape[-1] ** -0.5
        mixed = self.softmax(scores) @ values
        return self.out(mixed.transpose(1, 2).flatten(2))

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return self.attend(x, position, *self.keys_values(x, position))

"""A CodeFormer-style face restoration model, written from the paper's description (Zhou et al., NeurIPS 2022,
"Towards Robust Blind Face Restoration with Codebook Lookup Transformer"), not from its code.

A convolutional encoder takes the 512 px face to 16 x 16 tokens; a transformer of self-attention layers predicts,
for each token, an index into a learned codebook (1024 entries of 256 values); the looked-up codes go through a
convolutional decoder back to 512 px. At 32 to 256 px the decoder fuses the encoder's features of the same
resolution through a controllable feature transformation whose strength is the fidelity `weight` (0: codebook
only, favouring quality; 1: as much of the input as it gives).

I/O of the catalog's codeformer: `input` [1, 3, 512, 512] in [-1, 1] and `weight` [1] (float64) -> `output`
[1, 3, 512, 512] in about [-1, 1]. `width` is the channel count at 512 px (the encoder and decoder widen by
1, 2, 2, 4, 4, 8 x width down to 16 px); the transformer is 8 x width wide and the codes 4 x width long. The defaults
give 77M parameters. `size` (a multiple of 32) sets the token grid, size / 32 on a side (quick tests use small
ones); features are named by level, 0 at full resolution.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from slimfuse.optimize.torch.attention import SelfAttention
from slimfuse.optimize.torch.blocks import OUTPUT, StagedModel, State, norm_groups, without

SIZE = 512
MULTIPLIERS = (1, 2, 2, 4, 4, 8)  # levels 0 to 5: 512, 256, 128, 64, 32, 16 px
TOKEN_LEVEL = len(MULTIPLIERS) - 1
FUSED = range(1, TOKEN_LEVEL)  # 256 to 32 px
HEADS = 8
LAYERS = 9
CODEBOOK_SIZE = 1024


class ResBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.GroupNorm(norm_groups(in_channels), in_channels), nn.SiLU(), nn.Conv2d(in_channels, out_channels, 3, padding=1),
            nn.GroupNorm(norm_groups(out_channels), out_channels), nn.SiLU(), nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.skip = nn.Identity() if in_channels == out_channels else nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.skip(x) + self.body(x)


def res_blocks(in_channels: int, out_channels: int, count: int) -> nn.Sequential:
    return nn.Sequential(*(ResBlock(in_channels if index == 0 else out_channels, out_channels) for index in range(count)))


def to_channels(in_channels: int, out_channels: int) -> nn.Sequential:
    return nn.Sequential(nn.GroupNorm(norm_groups(in_channels), in_channels), nn.SiLU(),
                         nn.Conv2d(in_channels, out_channels, 3, padding=1))


class EncoderLevel(nn.Module):
    """Residual blocks at one resolution (their output kept for the decoder's fusion), then a strided convolution."""

    def __init__(self, level: int, in_channels: int, out_channels: int, blocks: int) -> None:
        super().__init__()
        self.level = level
        self.blocks = res_blocks(in_channels, out_channels, blocks)
        self.down = None if level == TOKEN_LEVEL else nn.Conv2d(out_channels, out_channels, 3, stride=2, padding=1)

    def forward(self, state: State) -> State:
        x = self.blocks(state["x"])
        kept = {f"enc{self.level}": x} if self.level in FUSED else {}
        return {**state, **kept, "x": x if self.down is None else self.down(x)}


class Stem(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)

    def forward(self, state: State) -> State:
        weight = state["weight"].to(torch.float32)  # fidelity arrives as float64 (catalog); compute in float32
        return {"x": self.conv(state["input"]), "weight": weight}


class TransformerLayer(nn.Module):
    """Pre-norm self-attention (positions added to queries and keys) and a feed-forward block."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attention = SelfAttention(dim, HEADS)
        self.norm2 = nn.LayerNorm(dim)
        self.feed_forward = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x), position)
        return x + self.feed_forward(self.norm2(x))


class CodebookLookup(nn.Module):
    """Tokens -> transformer -> codebook indices -> the codes, as a 16 x 16 feature map."""

    def __init__(self, code_dim: int, dim: int, codebook_size: int, tokens: int) -> None:
        super().__init__()
        self.embed = nn.Linear(code_dim, dim)
        self.position = nn.Parameter(torch.zeros(tokens, dim))
        nn.init.normal_(self.position, std=0.02)
        self.layers = nn.ModuleList(TransformerLayer(dim) for _ in range(LAYERS))
        self.predict = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, codebook_size, bias=False))
        self.codebook = nn.Embedding(codebook_size, code_dim)

    def forward(self, state: State) -> State:
        features = state["x"]
        batch, _, height, width = features.shape
        x = self.embed(features.flatten(2).transpose(1, 2))
        for layer in self.layers:
            x = layer(x, self.position)
        indices = self.predict(x).argmax(dim=-1)
        codes = self.codebook(indices).transpose(1, 2).reshape(batch, -1, height, width)  # the codes' own length
        return {**state, "x": codes}


class Fusion(nn.Module):
    """Controllable feature transformation: decoder + weight * (decoder * scale + shift), with the scale and shift
    computed from the encoder's and the decoder's features together."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.encode = ResBlock(2 * channels, channels)
        self.scale = self._branch(channels)
        self.shift = self._branch(channels)

    @staticmethod
    def _branch(channels: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.LeakyReLU(0.2),
                             nn.Conv2d(channels, channels, 3, padding=1))

    def forward(self, decoded: torch.Tensor, encoded: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        joint = self.encode(torch.cat([encoded, decoded], dim=1))
        return decoded + weight.reshape(-1, 1, 1, 1) * (decoded * self.scale(joint) + self.shift(joint))


class DecoderLevel(nn.Module):
    """Residual blocks at one resolution, the fusion with the encoder there (32 to 256 px), then upsampling."""

    def __init__(self, level: int, in_channels: int, out_channels: int, blocks: int) -> None:
        super().__init__()
        self.level = level
        self.blocks = res_blocks(in_channels, out_channels, blocks)
        self.fusion = Fusion(out_channels) if level in FUSED else None
        self.up = None if level == 0 else nn.Conv2d(out_channels, out_channels, 3, padding=1)

    def forward(self, state: State) -> State:
        x = self.blocks(state["x"])
        if self.fusion is not None:
            x = self.fusion(x, state[f"enc{self.level}"], state["weight"])
        if self.up is not None:
            x = self.up(functional.interpolate(x, scale_factor=2.0, mode="nearest"))
        return {**without(state, f"enc{self.level}"), "x": x}


class Transition(nn.Module):
    """Normalise, activate and convolve the running features to another channel count (into and out of the codes)."""

    def __init__(self, in_channels: int, out_channels: int, final: bool = False) -> None:
        super().__init__()
        self.layer = to_channels(in_channels, out_channels)
        self.final = final

    def forward(self, state: State) -> State:
        x = self.layer(state["x"])
        return {OUTPUT: x} if self.final else {**state, "x": x}


class CodeFormerStyle(StagedModel):
    def __init__(self, width: int = 64, size: int = SIZE, codebook_size: int = CODEBOOK_SIZE, encoder_blocks: int = 2,
                 decoder_blocks: int = 3) -> None:
        widths = [width * multiplier for multiplier in MULTIPLIERS]
        code_dim, dim = 4 * width, 8 * width
        stages: list[nn.Module] = [Stem(width)]
        stages += [EncoderLevel(level, widths[max(level - 1, 0)], widths[level], encoder_blocks)
                   for level in range(len(widths))]
        stages.append(Transition(widths[-1], code_dim))
        stages.append(CodebookLookup(code_dim, dim, codebook_size, (size >> TOKEN_LEVEL) ** 2))
        stages.append(Transition(code_dim, widths[-1]))
        stages += [DecoderLevel(level, widths[min(level + 1, len(widths) - 1)], widths[level], decoder_blocks)
                   for level in reversed(range(len(widths)))]
        stages.append(Transition(width, 3, final=True))
        super().__init__(("input", "weight"), stages)

    def protected_layers(self) -> list[nn.Module | nn.Parameter]:
        """Also the transformer with its codebook, and the convolution that makes its tokens: channel pruning
        traces through autograd, which stops at the argmax, and attention heads are outside what it keeps
        consistent."""
        index = next(index for index, stage in enumerate(self.stages) if isinstance(stage, CodebookLookup))
        lookup = self.stages[index]
        return [*super().protected_layers(), self.stages[index - 1], lookup, lookup.position]

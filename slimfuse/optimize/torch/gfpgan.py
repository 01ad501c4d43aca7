"""A GFPGAN-style face restoration generator, written from the paper's description (Wang et al., CVPR 2021,
"Towards Real-World Blind Face Restoration with Generative Facial Prior"), not from its code.

A U-Net encoder takes the 512 px face down to 16 px; the bottleneck gives the style code (through a mapping MLP) and
the decoder's first features. A StyleGAN2-style decoder climbs back to 512 px with modulated convolutions, and at
every resolution a spatial feature transform (SFT: a per-pixel scale and shift) computed from the encoder's features
of that resolution conditions it; each level adds its RGB to the upsampled RGB of the level below.

I/O of the catalog's gfpgan_1.4: `input` [1, 3, 512, 512] in [-1, 1] -> `output` [1, 3, 512, 512] in about [-1, 1].
`width` is the channel count at full resolution (it doubles per halving, up to 8 x width); the default 64 gives
about the parameter count of GFPGAN v1.4 (79M). `size` (a power of two, 32 or more) only sets how many levels there
are down to 16 px (quick tests use small ones); features are named by level, 0 at full resolution.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional

from slimfuse.optimize.torch.blocks import OUTPUT, ModulatedConv2d, StagedModel, State, without

SIZE = 512
BOTTOM = 16
MAPPING_LAYERS = 4
BOTTLENECK_BLOCKS = 2


def channels(level: int, width: int) -> int:
    return min(8 * width, width << level)


def act(x: torch.Tensor) -> torch.Tensor:
    """Leaky ReLU with StyleGAN's gain, so that the activations keep unit scale."""
    return functional.leaky_relu(x, 0.2) * math.sqrt(2.0)


def conv3(in_channels: int, out_channels: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1)


class Stem(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, width, 1)

    def forward(self, state: State) -> State:
        return {**without(state, "input"), "enc0": act(self.conv(state["input"]))}


class Down(nn.Module):
    """A residual block that halves the resolution; the input features stay in the state for the decoder's SFT."""

    def __init__(self, level: int, width: int) -> None:
        super().__init__()
        self.level = level
        in_channels, out_channels = channels(level, width), channels(level + 1, width)
        self.conv1 = conv3(in_channels, in_channels)
        self.conv2 = conv3(in_channels, out_channels, stride=2)
        self.skip = nn.Conv2d(in_channels, out_channels, 1, stride=2, bias=False)

    def forward(self, state: State) -> State:
        x = state[f"enc{self.level}"]
        y = act(self.conv2(act(self.conv1(x))))
        return {**state, f"enc{self.level + 1}": (y + self.skip(x)) / math.sqrt(2.0)}


class Residual(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = conv3(channels, channels)
        self.conv2 = conv3(channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + act(self.conv2(act(self.conv1(x))))) / math.sqrt(2.0)


class Bottleneck(nn.Module):
    """Residual blocks at the bottom, then the style code (pooled features through a mapping MLP) and the decoder's
    first features."""

    def __init__(self, bottom_level: int, width: int, style_dim: int) -> None:
        super().__init__()
        self.bottom_level = bottom_level
        bottom = channels(bottom_level, width)
        self.blocks = nn.Sequential(*(Residual(bottom) for _ in range(BOTTLENECK_BLOCKS)))
        self.pool_conv = conv3(bottom, bottom)
        self.to_style = nn.Linear(bottom, style_dim)
        self.mapping = nn.Sequential(*(layer for _ in range(MAPPING_LAYERS)
                                       for layer in (nn.Linear(style_dim, style_dim), nn.LeakyReLU(0.2))))
        self.start = conv3(bottom, bottom)

    def forward(self, state: State) -> State:
        features = self.blocks(state[f"enc{self.bottom_level}"])
        style = self.mapping(self.to_style(act(self.pool_conv(features)).mean(dim=(2, 3))))
        return {**state, "style": style, "x": act(self.start(features))}


class SFT(nn.Module):
    """Spatial feature transform: a per-pixel scale and shift, each from two convolutions of the encoder's
    features."""

    def __init__(self, condition_channels: int, out_channels: int) -> None:
        super().__init__()
        self.scale = self._branch(condition_channels, out_channels)
        self.shift = self._branch(condition_channels, out_channels)

    @staticmethod
    def _branch(in_channels: int, out_channels: int) -> nn.Sequential:
        return nn.Sequential(conv3(in_channels, out_channels), nn.LeakyReLU(0.2), conv3(out_channels, out_channels))

    def forward(self, x: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        return x * (1 + self.scale(condition)) + self.shift(condition)


class Level(nn.Module):
    """One decoder resolution: modulated convolution (upsampling below), SFT from the encoder, modulated convolution,
    and its RGB added to the upsampled RGB of the level below; it drops the encoder features it used."""

    def __init__(self, level: int, bottom_level: int, width: int, style_dim: int) -> None:
        super().__init__()
        self.level = level
        out_channels = channels(level, width)
        in_channels = channels(min(level + 1, bottom_level), width)
        self.conv1 = ModulatedConv2d(in_channels, out_channels, 3, style_dim, upsample=level < bottom_level)
        self.sft = SFT(out_channels, out_channels)
        self.conv2 = ModulatedConv2d(out_channels, out_channels, 3, style_dim)
        self.to_rgb = ModulatedConv2d(out_channels, 3, 1, style_dim, demodulate=False)

    def forward(self, state: State) -> State:
        style, condition = state["style"], state[f"enc{self.level}"]
        x = self.sft(act(self.conv1(state["x"], style)), condition)
        x = act(self.conv2(x, style))
        rgb = self.to_rgb(x, style)
        if "rgb" in state:
            rgb = rgb + functional.interpolate(state["rgb"], scale_factor=2.0, mode="bilinear", align_corners=False)
        if self.level == 0:
            return {OUTPUT: rgb}
        return {**without(state, f"enc{self.level}"), "x": x, "rgb": rgb}


class GFPGANStyle(StagedModel):
    def __init__(self, width: int = 64, size: int = SIZE) -> None:
        style_dim = 8 * width
        bottom = int(math.log2(size // BOTTOM))  # the level at 16 px: 5 at 512 px
        stages: list[nn.Module] = [Stem(width)]
        stages += [Down(level, width) for level in range(bottom)]
        stages.append(Bottleneck(bottom, width, style_dim))
        stages += [Level(level, bottom, width, style_dim) for level in reversed(range(bottom + 1))]
        super().__init__(("input",), stages)

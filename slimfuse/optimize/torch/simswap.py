"""A SimSwap-style face swapper, written from the paper's description (Chen et al., ACM MM 2020, "SimSwap: An
Efficient Framework For High Fidelity Face Swapping"), not from its code.

A convolutional encoder takes the 256 px target face down to 32 px; residual blocks with adaptive instance
normalisation (AdaIN: instance-normalised features scaled and shifted per channel by linear maps of the 512-d source
identity) inject the identity; a decoder of upsampling convolutions gives the swapped face.

I/O of the catalog's simswap_256: `target` [1, 3, 256, 256] (RGB, ImageNet mean/std) and `source` [1, 512] (the
identity vector) -> `output` [1, 3, 256, 256] in [0, 1]. `width` is the channel count at full resolution (doubling
per halving, 8 x width in the residual blocks); the default 64 with 9 blocks gives about 55M parameters.
"""
from __future__ import annotations

import torch
from torch import nn

from slimfuse.optimize.torch.blocks import OUTPUT, StagedModel, State, without

SIZE = 256
DOWNSAMPLINGS = 3
IDENTITY_DIM = 512


def conv_bn_relu(in_channels: int, out_channels: int, kernel_size: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=kernel_size // 2,
                                   padding_mode="reflect"),
                         nn.BatchNorm2d(out_channels), nn.ReLU())


class Encode(nn.Module):
    def __init__(self, layer: nn.Module, source: str) -> None:
        super().__init__()
        self.layer = layer
        self.source = source

    def forward(self, state: State) -> State:
        return {**without(state, self.source), "x": self.layer(state[self.source])}


class AdaIN(nn.Module):
    """Instance normalisation, then a per-channel scale and shift from the identity vector."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels)
        self.scale = nn.Linear(IDENTITY_DIM, channels)
        self.shift = nn.Linear(IDENTITY_DIM, channels)

    def forward(self, x: torch.Tensor, identity: torch.Tensor) -> torch.Tensor:
        return self.norm(x) * (1 + self.scale(identity)[:, :, None, None]) + self.shift(identity)[:, :, None, None]


class IdentityBlock(nn.Module):
    """A residual block whose two convolutions are each followed by AdaIN on the source identity."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, padding_mode="reflect")
        self.adain1 = AdaIN(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, padding_mode="reflect")
        self.adain2 = AdaIN(channels)

    def forward(self, state: State) -> State:
        x, identity = state["x"], state["source"]
        y = torch.relu(self.adain1(self.conv1(x), identity))
        return {**state, "x": x + self.adain2(self.conv2(y), identity)}


class Head(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(width, 3, 7, padding=3, padding_mode="reflect")

    def forward(self, state: State) -> State:
        return {OUTPUT: (torch.tanh(self.conv(state["x"])) + 1) / 2}


class SimSwapStyle(StagedModel):
    def __init__(self, width: int = 64, blocks: int = 9) -> None:
        widths = [width << step for step in range(DOWNSAMPLINGS + 1)]  # 64 128 256 512
        stages: list[nn.Module] = [Encode(conv_bn_relu(3, width, 7), "target")]
        stages += [Encode(conv_bn_relu(a, b, 3, stride=2), "x") for a, b in zip(widths, widths[1:], strict=False)]
        stages += [IdentityBlock(widths[-1]) for _ in range(blocks)]
        stages += [Encode(nn.Sequential(nn.Upsample(scale_factor=2.0, mode="bilinear", align_corners=False),
                                        conv_bn_relu(b, a, 3)), "x")
                   for a, b in reversed(list(zip(widths, widths[1:], strict=False)))]
        stages.append(Head(width))
        super().__init__(("target", "source"), stages)

"""Building blocks the reference architectures share.

Every architecture is a `StagedModel`: a list of stages, each a module that maps the boundary state (a dict of named
tensors: the inputs, the skip features still needed, the running activation) to the next state. The model's forward
is nothing but running its stages in turn, so segmented execution (slimfuse.optimize.torch.segmented) runs exactly the same
code, one stage at a time.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

State = dict[str, torch.Tensor]
OUTPUT = "output"


class StagedModel(nn.Module):
    """A model made of stages run in sequence over a `State`; subclasses give the stages and the input names."""

    def __init__(self, input_names: Sequence[str], stages: Sequence[nn.Module]) -> None:
        super().__init__()
        self.input_names = tuple(input_names)
        self.stages = nn.ModuleList(stages)

    def segments(self) -> list[nn.Module]:
        return list(self.stages)

    def protected_layers(self) -> list[nn.Module | nn.Parameter]:
        """What channel pruning must leave alone: the first and last stages, which read the inputs and write the
        output."""
        return [self.stages[0], self.stages[-1]]

    def initial_state(self, *inputs: torch.Tensor) -> State:
        return dict(zip(self.input_names, inputs, strict=True))

    @staticmethod
    def final_output(state: State) -> torch.Tensor:
        return state[OUTPUT]

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        state = self.initial_state(*inputs)
        for stage in self.stages:
            state = stage(state)
        return self.final_output(state)


def parameter_count(model: nn.Module) -> int:
    return sum(parameter.numel() for parameter in model.parameters())


def without(state: State, *names: str) -> State:
    """The state less the named entries (a stage drops what no later stage reads, so boundaries stay small)."""
    return {key: value for key, value in state.items() if key not in names}


def norm_groups(channels: int, preferred: int = 32) -> int:
    """GroupNorm's group count: the preferred one where it leaves at least two channels per group, else fewer (tiny
    test widths). Two or more per group also split evenly over a concatenation of two equal halves, as channel
    pruning needs."""
    return math.gcd(preferred, max(channels // 2, 1))


class Demodulation(nn.Module):
    """StyleGAN2's weight demodulation, 1 / sqrt(sum over inputs and taps of (w * s)^2): a normalisation whose sum of
    squares outgrows float16, so slimfuse.optimize.torch.precision keeps it in float32.

    Inference only: the styles are detached so torch-pruning's graph trace does not read the matmul with the weights
    as an element-wise link between input and output channels (the values are the same)."""

    def forward(self, weight: torch.Tensor, styles: torch.Tensor) -> torch.Tensor:
        energy = weight.detach().pow(2).sum(dim=(2, 3))
        return torch.rsqrt(styles.detach().pow(2) @ energy.t() + 1e-8)


class ModulatedConv2d(nn.Module):
    """StyleGAN2's modulated convolution written as scale-inputs, plain convolution, scale-outputs (equal to the
    per-sample weight form), so it stays an ordinary Conv2d for ONNX export and channel pruning."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, style_dim: int,
                 demodulate: bool = True, upsample: bool = False) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.modulation = nn.Linear(style_dim, in_channels)
        nn.init.ones_(self.modulation.bias)  # styles start at 1: the unmodulated convolution
        self.demodulation = Demodulation() if demodulate else None
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.upsample = upsample

    def forward(self, x: torch.Tensor, style: torch.Tensor) -> torch.Tensor:
        if self.upsample:
            x = nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        styles = self.modulation(style)
        y = self.conv(x * styles[:, :, None, None])
        if self.demodulation is not None:
            y = y * self.demodulation(self.conv.weight, styles)[:, :, None, None]
        return y + self.bias[None, :, None, None]


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Build under this seed (PyTorch's own initialisers draw from the global generator), restoring the caller's
    random state afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield

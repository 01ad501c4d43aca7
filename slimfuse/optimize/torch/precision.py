"""Mixed-precision inference: the model runs under torch.autocast (float16 or bfloat16), except the layer types
listed to stay in float32, whose sums of squares and exponentials outgrow float16 (normalisations, softmax,
StyleGAN2's demodulation).

A naive `model.half()` runs every operation in float16: a sum of squares over large activations overflows to inf
and an exp of a large logit too (NaN after a division). Autocast runs convolutions and matrix products in the low
precision, where they are fast and safe, and here the listed layers get float32 inputs with autocast off.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from slimfuse.optimize.torch.blocks import Demodulation

KEEP_FP32: tuple[type[nn.Module], ...] = (
    nn.modules.batchnorm._BatchNorm,
    nn.GroupNorm,
    nn.modules.instancenorm._InstanceNorm,
    nn.LayerNorm,
    nn.Softmax,
    Demodulation,
)
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def default_dtype(device: torch.device | str) -> torch.dtype:
    """bfloat16 on the CPU (float16 is slow there and overflows the same); float16 on GPUs."""
    return torch.bfloat16 if torch.device(device).type == "cpu" else torch.float16


def _float32(value: Any) -> Any:
    return value.float() if isinstance(value, torch.Tensor) and value.is_floating_point() else value


def _in_float32(forward: Callable[..., Any], device_type: str) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        with torch.autocast(device_type, enabled=False):
            return forward(*map(_float32, args), **{key: _float32(value) for key, value in kwargs.items()})

    return run


class MixedPrecision(nn.Module):
    """Runs `model` under autocast in `dtype`, with the `keep_fp32` layer types in float32; outputs come back in
    float32. The kept layers of `model` are adapted in place (their forward is wrapped), so build one per model."""

    def __init__(self, model: nn.Module, dtype: torch.dtype | None = None, device_type: str | None = None,
                 keep_fp32: Sequence[type[nn.Module]] = KEEP_FP32) -> None:
        super().__init__()
        self.model = model
        first = next(model.parameters(), None)
        self.device_type = device_type or (first.device.type if first is not None else "cpu")
        self.dtype = dtype or default_dtype(self.device_type)
        kept = tuple(keep_fp32)
        for module in model.modules():
            if kept and isinstance(module, kept):
                module.forward = _in_float32(module.forward, self.device_type)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        with torch.autocast(self.device_type, dtype=self.dtype):
            return self.model(*inputs).float()

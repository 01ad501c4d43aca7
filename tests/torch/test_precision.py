"""Mixed precision: where a naive float16 model (`model.half()`) overflows to inf or NaN, autocast with the
sensitive layers kept in float32 stays finite and close to float32."""
from __future__ import annotations

import torch
from torch import nn

from slimfuse.optimize.torch.architectures import ARCHITECTURES
from slimfuse.optimize.torch.blocks import ModulatedConv2d
from slimfuse.optimize.torch.precision import KEEP_FP32, MixedPrecision, default_dtype


class PlainSoftmax(nn.Module):
    """A softmax written out without subtracting the maximum, as some exported graphs have it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        exponentials = torch.exp(x)
        return exponentials / exponentials.sum(dim=-1, keepdim=True)


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)
        self.softmax = PlainSoftmax()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax(self.linear(self.norm(x)) * 4)


def _scorer_and_input() -> tuple[Scorer, torch.Tensor]:
    torch.manual_seed(0)
    scorer = Scorer().eval()
    with torch.no_grad():
        scorer.linear.weight.mul_(8)  # logits of 20 and more: exp overflows float16 (max 65504)
    return scorer, torch.randn(4, 16) * 1000  # large activations into the normalisation too


def test_naive_half_overflows_where_mixed_precision_does_not() -> None:
    scorer, x = _scorer_and_input()
    with torch.no_grad():
        reference = scorer(x)
        naive = scorer.half()(x.half()).float()
        scorer.float()
        mixed = MixedPrecision(scorer, torch.float16, "cpu", (*KEEP_FP32, PlainSoftmax))(x)
    assert torch.isfinite(reference).all()
    assert not torch.isfinite(naive).all()
    assert torch.isfinite(mixed).all() and mixed.dtype == torch.float32
    assert torch.allclose(mixed, reference, atol=0.02)


def test_demodulation_stays_in_float32() -> None:
    torch.manual_seed(0)
    conv = ModulatedConv2d(32, 8, 3, style_dim=4).eval()
    x, style = torch.randn(1, 32, 8, 8), torch.full((1, 4), 300.0)  # styles^2 summed outgrow float16
    with torch.no_grad():
        reference = conv(x, style)
        naive = conv.half()(x.half(), style.half()).float()
        conv.float()
        mixed = MixedPrecision(conv, torch.float16, "cpu")(x, style)
    naive_error = (naive - reference).abs().max() if torch.isfinite(naive).all() else torch.tensor(float("inf"))
    assert naive_error > 0.5  # the demodulation overflowed: the output lost its scale
    assert (mixed - reference).abs().max() < 0.02 * reference.abs().max()


def test_kept_layers_see_float32_under_autocast() -> None:
    architecture = ARCHITECTURES["codeformer"]
    model = MixedPrecision(architecture.build(4, size=128), torch.bfloat16)
    seen: dict[str, set[torch.dtype]] = {}

    def record(module: nn.Module, args: object, output: torch.Tensor) -> None:
        seen.setdefault(type(module).__name__, set()).add(output.dtype)

    for module in model.modules():
        if isinstance(module, nn.GroupNorm | nn.LayerNorm | nn.Softmax | nn.Conv2d):
            module.register_forward_hook(record)
    with torch.no_grad():
        output = model(*architecture.example_inputs(size=128))
    assert seen == {"Conv2d": {torch.bfloat16}, "GroupNorm": {torch.float32}, "LayerNorm": {torch.float32},
                    "Softmax": {torch.float32}}
    assert output.dtype == torch.float32 and torch.isfinite(output).all()


def test_default_dtype_per_device() -> None:
    assert default_dtype("cpu") == torch.bfloat16
    assert default_dtype("cuda") == torch.float16

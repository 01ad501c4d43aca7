"""Cached attention: exactly the uncached result below the similarity threshold, the previous keys and values above
it, and a refresh after the maximum number of reuses; wired into the CodeFormer-style transformer."""
from __future__ import annotations

import torch

from slimfuse.optimize.torch.architectures import ARCHITECTURES
from slimfuse.optimize.torch.attention import SelfAttention
from slimfuse.optimize.torch.attention_cache import CachedAttention, FrameGate, cache_attention

DIM, TOKENS = 32, 16
SIMILAR = torch.tensor([1.0, 0.0, 0.0])
ALIKE = torch.tensor([1.0, 0.1, 0.0])  # cosine 0.995
OTHER = torch.tensor([0.0, 1.0, 0.0])  # cosine 0


def _attention() -> tuple[SelfAttention, torch.Tensor]:
    torch.manual_seed(0)
    return SelfAttention(DIM, heads=4).eval(), torch.randn(TOKENS, DIM)


def test_gate_decisions() -> None:
    gate = FrameGate(threshold=0.92, refresh_every=3)
    decisions = [gate.next_frame(vector) for vector in (SIMILAR, ALIKE, ALIKE, ALIKE, ALIKE, OTHER, OTHER)]
    # first frame computes; two reuses; the third would be 3 frames back: refresh; ...; a different face: refresh
    assert decisions == [False, True, True, False, True, False, True]
    assert (gate.reused_frames, gate.refreshed_frames) == (4, 3)


def test_below_threshold_is_exactly_uncached_and_above_reuses() -> None:
    attention, position = _attention()
    gate = FrameGate()
    cached = CachedAttention(attention, gate)
    first, second, third = (torch.randn(1, TOKENS, DIM) for _ in range(3))
    with torch.no_grad():
        gate.next_frame(SIMILAR)
        assert torch.equal(cached(first, position), attention(first, position))
        gate.next_frame(ALIKE)  # similar: the first frame's keys and values serve the second frame's queries
        reused = cached(second, position)
        assert torch.equal(reused, attention.attend(second, position, *attention.keys_values(first, position)))
        assert not torch.allclose(reused, attention(second, position))
        gate.next_frame(OTHER)  # below the threshold: recomputed, exactly the uncached result
        assert torch.equal(cached(third, position), attention(third, position))


def test_refresh_after_the_maximum_count() -> None:
    attention, position = _attention()
    gate = FrameGate(refresh_every=5)
    cached = CachedAttention(attention, gate)
    frames = [torch.randn(1, TOKENS, DIM) for _ in range(6)]
    with torch.no_grad():
        outputs = []
        for frame in frames:
            gate.next_frame(SIMILAR)
            outputs.append(cached(frame, position))
    assert [torch.equal(output, attention(frame, position)) for output, frame in zip(outputs, frames, strict=True)] \
        == [True, False, False, False, False, True]


def test_codeformer_transformer_uses_the_cache() -> None:
    architecture = ARCHITECTURES["codeformer"]
    model, reference = architecture.build(4, size=128), architecture.build(4, size=128)
    gate = cache_attention(model)
    layers = [module for module in model.modules() if isinstance(module, CachedAttention)]
    assert len(layers) == 9 and gate.threshold == 0.92 and gate.refresh_every == 5
    calls: list[int] = []
    for layer in layers:
        inner = layer.attention
        original = inner.keys_values
        inner.keys_values = lambda x, position, original=original: calls.append(1) or original(x, position)
    inputs = architecture.example_inputs(size=128)
    shifted = (inputs[0].roll(2, dims=-1), inputs[1])
    with torch.no_grad():
        gate.next_frame(SIMILAR)
        assert torch.equal(model(*inputs), reference(*inputs)) and len(calls) == 9
        gate.next_frame(ALIKE)
        model(*shifted)
        assert len(calls) == 9  # every layer reused its keys and values
        gate.next_frame(OTHER)
        assert torch.equal(model(*shifted), reference(*shifted)) and len(calls) == 18

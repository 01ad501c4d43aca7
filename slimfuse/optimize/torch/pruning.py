"""Structured channel pruning with torch-pruning: whole channels (and the weights that read them) go, so the
pruned model is really smaller and faster, not just sparse.

Channels are ranked by the L2 magnitude of their group's weights (torch-pruning's dependency graph keeps coupled
layers, residual adds and concatenations consistent). A step's ratio is the share of parameters to remove; each
prunable layer then loses 1 - sqrt(1 - ratio) of its channels (a convolution's parameters scale with its input
times its output channels). The first and last stages (or layers) and the model's `protected_layers()` are never
pruned, so inputs and outputs keep their shapes.

`prune_gated` climbs in steps of 10% and checks the quality gate after each step, keeping the last model that
passed. A pruning is recorded as torch-pruning's history (which channels of which layer), so that `replay` can
shape a freshly built model, even one on the meta device, to load the pruned weights into.
"""
from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch_pruning as tp
from torch import nn

from slimfuse.models.spec import GateSpec
from slimfuse.models.variants import FAIL, PASS
from slimfuse.optimize.torch.blocks import StagedModel, parameter_count

STEP = 0.1
MAX_RATIO = 0.9
History = list[tuple[str, bool, list[int]]]
"""torch-pruning's record: (layer name, output channels pruned (else input), channel indices)."""


def protected_layers(model: nn.Module) -> list[nn.Module | nn.Parameter]:
    """What pruning must not touch: the model's own list where it gives one, else its first and last weighted
    layers (in registration order)."""
    own = getattr(model, "protected_layers", None)
    if callable(own):
        return list(own())
    weighted = [module for module in model.modules() if isinstance(module, nn.Conv2d | nn.Linear)]
    return [weighted[0], weighted[-1]] if weighted else []


def channel_ratio(parameter_ratio: float) -> float:
    return 1.0 - math.sqrt(1.0 - parameter_ratio)


def _not_kept(tensor: torch.Tensor) -> None:
    return None


def _never_read(packed: None) -> torch.Tensor:
    raise RuntimeError("the pruning trace keeps no activations for a backward pass")


def _traced(model: nn.Module, example_inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Where the trace starts: the output, and for a StagedModel every tensor at every stage boundary, so that a
    branch whose result reaches the output only through an argmax (CodeFormer's encoder before its codebook
    lookup) is in the dependency graph too."""
    if not isinstance(model, StagedModel):
        return [model(*example_inputs)]
    state, found = model.initial_state(*example_inputs), []
    for stage in model.stages:
        state = stage(state)
        found += [tensor for tensor in state.values() if tensor.grad_fn is not None]
    return found


def _pruner(model: nn.Module, example_inputs: Sequence[torch.Tensor], ratio: float) -> tp.pruner.BasePruner:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch-pruning warns about every non-module op it traces
        # The dependency graph is traced through autograd, but only the graph's shape is read: the tensors autograd
        # would save for a backward pass (every activation, GBs at 512 px) are dropped as they come.
        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(_not_kept, _never_read):
            return tp.pruner.BasePruner(model, tuple(example_inputs), forward_fn=_traced,
                                        importance=tp.importance.GroupMagnitudeImportance(p=2),
                                        pruning_ratio=channel_ratio(ratio), ignored_layers=protected_layers(model))


def prune(model: nn.Module, example_inputs: Sequence[torch.Tensor], ratio: float) -> History:
    """Remove about `ratio` of the model's parameters, in place; returns the history for `replay`."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"pruning ratio {ratio} is not in [0, 1)")
    pruner = _pruner(model, example_inputs, ratio)
    pruner.step()
    return [(name, bool(out_channels), [int(index) for index in indices])
            for name, out_channels, indices in pruner.pruning_history()]


def replay(model: nn.Module, example_inputs: Sequence[torch.Tensor], history: History) -> nn.Module:
    """Shape a freshly built model (any device, meta included) as the pruned one, in place, to load its weights."""
    pruner = _pruner(model, example_inputs, 0.0)
    pruner.DG.load_pruning_history([(name, out_channels, list(indices)) for name, out_channels, indices in history])
    return model


@dataclass(frozen=True)
class PruneStep:
    ratio: float
    """The share of parameters asked to go."""
    parameters: int
    removed: float
    """The share of parameters that went."""
    metric: float
    passed: bool

    @property
    def verdict(self) -> str:
        return PASS if self.passed else FAIL


@dataclass(frozen=True)
class GatedPruning:
    model: nn.Module
    """The last model that passed (the original, unpruned, when none did)."""
    ratio: float
    history: History
    steps: tuple[PruneStep, ...]


def prune_gated(model: nn.Module, example_inputs: Sequence[torch.Tensor], measure: Callable[[nn.Module], float],
                gate: GateSpec, step: float = STEP, max_ratio: float = MAX_RATIO) -> GatedPruning:
    """Prune copies of `model` at step, 2 x step, ... up to `max_ratio`, measuring each with `measure` (for
    example the PSNR of its output against the original's) and stopping at the first that fails the gate."""
    original = parameter_count(model)
    passed: tuple[nn.Module, float, History] = (model, 0.0, [])
    steps: list[PruneStep] = []
    for index in range(1, int(round(max_ratio / step)) + 1):
        ratio = round(index * step, 6)
        candidate = copy.deepcopy(model)
        history = prune(candidate, example_inputs, ratio)
        with torch.no_grad():
            value = float(measure(candidate))
        count = parameter_count(candidate)
        steps.append(PruneStep(ratio, count, 1.0 - count / original, value, gate.passes(value)))
        if not steps[-1].passed:
            break
        passed = (candidate, ratio, history)
    return GatedPruning(*passed, tuple(steps))

"""A user's weights for a reference architecture: .safetensors, or .pth / .pt read with `weights_only=True` (plain
tensors only: nothing pickled is executed). A checkpoint whose names or shapes differ from the architecture's is
refused with one line that says how."""
from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from slimfuse.errors import InputMissingError, ModelInvalidError, UnsupportedTypeError

SAFETENSORS = (".safetensors",)
PICKLED = (".pth", ".pt")
NESTED_KEYS = ("state_dict", "params_ema", "params", "model")
"""Where trainers commonly nest the weights inside a checkpoint dict."""
SHOWN = 3


def read_state(path: Path) -> dict[str, torch.Tensor]:
    """The named tensors of a checkpoint file, on the CPU."""
    path = Path(path)
    if not path.is_file():
        raise InputMissingError(path)
    suffix = path.suffix.lower()
    try:
        if suffix in SAFETENSORS:
            return load_file(path, device="cpu")
        if suffix in PICKLED:
            return _tensors(path, torch.load(path, weights_only=True, map_location="cpu"))
    except (SafetensorError, pickle.UnpicklingError, RuntimeError, EOFError) as exc:
        raise ModelInvalidError(path, f"not a readable weights file ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else 'no detail'})") from exc
    raise UnsupportedTypeError(path, f"weights must be {', '.join(SAFETENSORS + PICKLED)} (got '{suffix}')")


def _tensors(path: Path, loaded: object) -> dict[str, torch.Tensor]:
    if isinstance(loaded, Mapping):
        nested = [key for key in NESTED_KEYS if isinstance(loaded.get(key), Mapping)]
        if nested:
            loaded = loaded[nested[0]]
    if not isinstance(loaded, Mapping) or not all(isinstance(value, torch.Tensor) for value in loaded.values()):
        raise ModelInvalidError(path, "not a state dict (a mapping of names to tensors)")
    return dict(loaded)


def mismatch(module: nn.Module, state: Mapping[str, torch.Tensor]) -> str | None:
    """How a state differs from the module's own names and shapes, in words; None when it fits."""
    expected = module.state_dict()
    problems = []
    for label, names in (("missing", sorted(expected.keys() - state.keys())),
                         ("unexpected", sorted(state.keys() - expected.keys()))):
        if names:
            more = f" (+{len(names) - SHOWN} more)" if len(names) > SHOWN else ""
            problems.append(f"{len(names)} {label} ({', '.join(names[:SHOWN])}{more})")
    wrong = [f"{name} {tuple(state[name].shape)} instead of {tuple(tensor.shape)}"
             for name, tensor in expected.items() if name in state and state[name].shape != tensor.shape]
    if wrong:
        problems.append(f"{len(wrong)} of another shape ({'; '.join(wrong[:SHOWN])})")
    return "; ".join(problems) or None


def load_weights(module: nn.Module, path: Path | str) -> nn.Module:
    """Load a checkpoint into the module (in place; a module built on the meta device takes the tensors as they
    are), refusing one that does not match it exactly."""
    state = read_state(Path(path))
    problem = mismatch(module, state)
    if problem is not None:
        raise ModelInvalidError(path, f"checkpoint does not match the {type(module).__name__} architecture: {problem}")
    on_meta = any(tensor.is_meta for tensor in module.state_dict().values())
    module.load_state_dict(state, assign=on_meta)
    return module


def save_weights(module: nn.Module, path: Path | str) -> Path:
    """Write the module's tensors as .safetensors (contiguous copies; shared storage saved once per name)."""
    save_file({name: tensor.detach().contiguous().cpu() for name, tensor in module.state_dict().items()}, str(path))
    return Path(path)

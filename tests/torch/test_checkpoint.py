"""A user's checkpoint: .safetensors and .pth / .pt (weights only), nested state dicts, and one clear line for a
checkpoint of another architecture or size, a pickled object, or another file type."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from slimfuse.errors import InputMissingError, ModelInvalidError, UnsupportedTypeError
from slimfuse.optimize.torch.architectures import ARCHITECTURES
from slimfuse.optimize.torch.checkpoint import load_weights, save_weights

WIDTH = 4
SIMSWAP = ARCHITECTURES["simswap"]


class Payload:
    """Stands for any object a pickle would rebuild (and run code for)."""


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_safetensors_round_trip_into_a_meta_model(tmp_path: Path) -> None:
    trained = SIMSWAP.build(WIDTH, seed=7)
    path = save_weights(trained, tmp_path / "simswap.safetensors")
    loaded = load_weights(SIMSWAP.build(WIDTH, device="meta"), path)
    assert _same(loaded, trained) and not any(tensor.is_meta for tensor in loaded.state_dict().values())


@pytest.mark.parametrize("suffix", [".pth", ".pt"])
@pytest.mark.parametrize("nested", [None, "params_ema", "state_dict"])
def test_weights_only_torch_checkpoint(tmp_path: Path, suffix: str, nested: str | None) -> None:
    trained = SIMSWAP.build(WIDTH, seed=7)
    state = trained.state_dict()
    path = tmp_path / f"simswap{suffix}"
    torch.save(state if nested is None else {nested: state, "iteration": 1000}, path)
    loaded = load_weights(SIMSWAP.build(WIDTH), path)
    assert _same(loaded, trained)


def test_checkpoint_of_another_size_is_refused_with_what_differs(tmp_path: Path) -> None:
    path = save_weights(SIMSWAP.build(WIDTH * 2), tmp_path / "wide.safetensors")
    with pytest.raises(ModelInvalidError, match=r"does not match the SimSwapStyle architecture: \d+ of another shape "
                       r"\(stages\.0\.layer\.0\.weight \(8, 3, 7, 7\) instead of \(4, 3, 7, 7\)"):
        load_weights(SIMSWAP.build(WIDTH), path)


def test_checkpoint_of_another_architecture_names_missing_and_unexpected(tmp_path: Path) -> None:
    path = save_weights(ARCHITECTURES["gfpgan"].build(WIDTH), tmp_path / "gfpgan.safetensors")
    with pytest.raises(ModelInvalidError) as raised:
        load_weights(SIMSWAP.build(WIDTH), path)
    message = raised.value.message
    assert message.startswith(f"{path}: checkpoint does not match") and "missing (" in message
    assert "unexpected (" in message and "more)" in message and "\n" not in message


def test_pickled_objects_are_not_executed(tmp_path: Path) -> None:
    path = tmp_path / "evil.pth"
    torch.save({"weight": Payload()}, path)  # weights_only=True refuses to rebuild an arbitrary class
    with pytest.raises(ModelInvalidError, match="not a readable weights file"):
        load_weights(SIMSWAP.build(WIDTH), path)


def test_other_files(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"\0" * 16)
    with pytest.raises(UnsupportedTypeError):
        load_weights(SIMSWAP.build(WIDTH), tmp_path / "weights.bin")
    with pytest.raises(InputMissingError):
        load_weights(SIMSWAP.build(WIDTH), tmp_path / "absent.safetensors")
    (tmp_path / "broken.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ModelInvalidError, match="not a readable weights file"):
        load_weights(SIMSWAP.build(WIDTH), tmp_path / "broken.safetensors")
    save_file({"only": torch.zeros(2)}, str(tmp_path / "tiny.safetensors"))
    with pytest.raises(ModelInvalidError, match="missing"):
        load_weights(SIMSWAP.build(WIDTH), tmp_path / "tiny.safetensors")

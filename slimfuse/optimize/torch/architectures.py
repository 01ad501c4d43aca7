"""The reference architectures by their `slimfuse optimize ARCH --report` names, each tied to the catalog entry
whose inputs and outputs it has, and the example inputs built from that entry (a real face photo where the
`samples` extra is installed)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np
import torch

from slimfuse.errors import InputMissingError
from slimfuse.models.catalog import Catalog
from slimfuse.models.spec import ModelIO, TensorSpec
from slimfuse.models.tensors import to_tensor
from slimfuse.samples import ASTRONAUT_FACE, sample_path
from slimfuse.optimize.torch.blocks import StagedModel, seeded
from slimfuse.optimize.torch.codeformer import CodeFormerStyle
from slimfuse.optimize.torch.gfpgan import GFPGANStyle
from slimfuse.optimize.torch.simswap import SimSwapStyle

DEFAULT_SEED = 0
FIDELITY = 0.5


@dataclass(frozen=True)
class Architecture:
    name: str
    catalog_name: str
    """The catalog entry whose ONNX inputs and outputs the architecture has."""
    factory: Callable[[int, int], StagedModel]
    """(width, size) -> the model."""
    default_width: int

    @property
    def io(self) -> ModelIO:
        io = Catalog().get(self.catalog_name).io
        assert io is not None, self.catalog_name
        return io

    @property
    def size(self) -> int:
        """The catalog entry's crop size."""
        assert self.io.crop_size is not None, self.catalog_name
        return self.io.crop_size

    def build(self, width: int | None = None, seed: int = DEFAULT_SEED, device: torch.device | str = "cpu",
              size: int | None = None) -> StagedModel:
        """The model in eval mode with seeded random weights, drawn on the CPU so that every device gets the same
        ones (on the meta device: shapes only, no memory); `size` other than the catalog's for quick runs."""
        meta = torch.device(device).type == "meta"
        with seeded(seed), torch.device("meta" if meta else "cpu"):
            model = self.factory(self.default_width if width is None else width, size or self.size)
        return model.to(device).eval()

    def example_inputs(self, device: torch.device | str = "cpu", seed: int = DEFAULT_SEED,
                       size: int | None = None) -> tuple[torch.Tensor, ...]:
        """One input per catalog tensor: images from the face photo, normalised as the entry says (at `size` when
        given); the identity a seeded random unit vector; CodeFormer's fidelity weight 0.5."""
        generator = np.random.default_rng(seed)
        return tuple(torch.from_numpy(self._example(spec, generator, size or self.size)).to(device)
                     for spec in self.io.inputs)

    def _example(self, spec: TensorSpec, generator: np.random.Generator, size: int) -> np.ndarray:
        shape = tuple(int(dim) for dim in spec.shape)
        if len(shape) == 4:
            return to_tensor(face_photo(size), self.io.mean, self.io.std).astype(spec.dtype)
        if len(shape) == 2:
            vector = generator.standard_normal(shape)
            return (vector / np.linalg.norm(vector, axis=1, keepdims=True)).astype(spec.dtype)
        return np.full(shape, FIDELITY, dtype=spec.dtype)


def face_photo(size: int) -> np.ndarray:
    """The face of the packaged astronaut portrait (scikit-image) with a margin, size x size RGB uint8; a smooth
    synthetic pattern where the `samples` extra is not installed."""
    try:
        image = cv2.cvtColor(cv2.imread(str(sample_path("astronaut"))), cv2.COLOR_BGR2RGB)
    except InputMissingError:
        ramp = np.linspace(0, 255, size, dtype=np.float32)
        return np.stack([np.add.outer(ramp, ramp) / 2, np.tile(ramp, (size, 1)), np.tile(ramp[:, None], (1, size))],
                        -1).astype(np.uint8)
    x0, y0, x1, y1 = ASTRONAUT_FACE
    half = max(x1 - x0, y1 - y0)
    cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
    crop = image[max(cy - half, 0):cy + half, max(cx - half, 0):cx + half]
    return cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA)


ARCHITECTURES: dict[str, Architecture] = {
    architecture.name: architecture
    for architecture in (
        Architecture("gfpgan", "gfpgan_1.4", lambda width, size: GFPGANStyle(width, size), 64),
        Architecture("simswap", "simswap_256", lambda width, size: SimSwapStyle(width), 64),  # any size: all convolutions
        Architecture("codeformer", "codeformer", lambda width, size: CodeFormerStyle(width, size), 64),
    )
}


def architecture_named(name: str) -> Architecture | None:
    """The architecture by its own name or its catalog entry's (`gfpgan` or `gfpgan_1.4`); None for another name."""
    return ARCHITECTURES.get(name) or next(
        (architecture for architecture in ARCHITECTURES.values() if architecture.catalog_name == name), None)

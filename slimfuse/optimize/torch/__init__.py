"""The optional PyTorch extra (`pip install 'slimfuse[torch]'`): reference architectures of the catalog's enhancers
and swappers, their ONNX export, and memory techniques measured side by side (`slimfuse optimize ARCH --report`).

Importing this package does not import torch: the core install works without it, and `require_torch` turns its
absence into the documented one-line error.
"""
from __future__ import annotations

import importlib

from slimfuse.errors import TorchMissingError

EXTRA_MODULES = ("torch", "torch_pruning", "safetensors")


def require_torch() -> None:
    """Raise TorchMissingError unless every module of the extra imports."""
    for name in EXTRA_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            raise TorchMissingError(detail=f"the PyTorch extra is not installed (cannot import {name}): "
                                    "pip install 'slimfuse[torch]'") from None

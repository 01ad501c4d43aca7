"""The PyTorch extra's tests: left out where the extra is not installed (the core install's tests do not need it;
`pip install -e '.[test]'` brings it)."""
from __future__ import annotations

import importlib.util

EXTRA = ("torch", "torch_pruning", "safetensors")

collect_ignore_glob = [] if all(importlib.util.find_spec(name) for name in EXTRA) else ["test_*.py"]

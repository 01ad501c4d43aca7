"""Test-only: every ONNX Runtime session of this process runs its graph as the file gives it
(`graph_optimization_level = ORT_DISABLE_ALL`), whatever level the caller asked for.

ONNX Runtime has no environment variable for that. Put this folder first on PYTHONPATH and Python imports this
module at start-up, in the test process and in every `python -m slimfuse ...` it spawns:

    PYTHONPATH=tests/narrow:. SLIMFUSE_HOME=/tmp/narrow-home python -m pytest -q -p no:cacheprovider

with a store of its own (models/, sources/ and bench-standins/ linked in from the usual one): a large model is
prepared for this CPU once and kept under $SLIMFUSE_HOME/prepared (slimfuse.models.prepared), and under this patch
it would be kept unoptimised under the key an ordinary run looks for.

It is one of the narrowed runs that check the suite does not depend on one CPU's optimised code paths (fused
kernels and re-laid-out weights round differently from the plain ones). The others need no code:

    OPENCV_CPU_DISABLE=AVX512-CLX,AVX512-SKX,AVX512F,AVX_VNNI,AVX2,FMA3,FP16,AVX,SSE4.2,POPCNT,SSE4.1,SSSE3
        OpenCV's dispatched SSSE3 .. AVX-512 code (names as cv2.getCPUFeaturesLine() spells them); the baseline
        (SSE .. SSE3) stays.
    NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR"
        numpy >= 2.4 dispatches by these groups (X86_V3: AVX, AVX2, FMA3, F16C, BMI; X86_V4: AVX-512 F/CD/VL/BW/DQ);
        numpy.show_runtime() then lists them under not_found. Older numpy 2 names the features themselves
        (AVX512F AVX512_SKX ... AVX2 FMA3 F16C AVX).

ONNX Runtime is patched when it is first imported (an import hook), so processes that never use it do not pay
for loading it. Set SLIMFUSE_NARROW_ORT=0 to turn the patch off without changing PYTHONPATH.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from types import ModuleType
from typing import Any

MODULE = "onnxruntime.capi.onnxruntime_inference_collection"


def _patch(module: ModuleType) -> None:
    import onnxruntime.capi._pybind_state as state

    session_class = module.InferenceSession
    if getattr(session_class, "_narrowed", False):
        return
    original = session_class.__init__

    def __init__(self: Any, path_or_bytes: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
        options = sess_options if sess_options is not None else state.SessionOptions()
        options.graph_optimization_level = state.GraphOptimizationLevel.ORT_DISABLE_ALL
        original(self, path_or_bytes, options, *args, **kwargs)

    session_class.__init__ = __init__
    session_class._narrowed = True


class _Loader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader)
                return spec
        return None


if os.environ.get("SLIMFUSE_NARROW_ORT", "1") != "0":
    sys.meta_path.insert(0, _Finder())

"""The code's shape: build_run is the only place a run is assembled, and the low layers never import the high ones.
Read from the source itself, so a new second assembler or an upward import fails here."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "slimfuse"
ASSEMBLER = "pipeline/run.py"
# What assembling a run means: the memory plan, the model pool, the processor chain and the analysis on a pool.
RUN_PARTS = ("plan_run", "ModelPool", "ChainSpec.of", "FaceAnalyser", "build_recognizer")
# Model pools outside a run, each for a reason of its own.
POOLS_ELSEWHERE = {
    "optimize/build.py": "the variant workshop loads the originals and the calibration faces to make and gate variants",
    "bench/quality.py": "the quality judge lists faces to measure the mouth and eye regions",
}
LOW_LAYERS = ("media", "models", "faces", "memory", "processors")
HIGH_LAYERS = ("slimfuse.pipeline", "slimfuse.cli", "slimfuse.bench", "slimfuse.api", "slimfuse.serve")


def _sources() -> dict[str, ast.Module]:
    return {path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
            for path in PACKAGE.rglob("*.py")}


def _calls(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name):
                names.add(function.id)
            elif isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
                names.add(f"{function.value.id}.{function.attr}")
    return names


def test_build_run_is_the_only_assembler() -> None:
    for name, tree in _sources().items():
        if name == ASSEMBLER:
            continue
        used = _calls(tree) & set(RUN_PARTS)
        if name in POOLS_ELSEWHERE:
            used -= {"ModelPool", "FaceAnalyser"}
        assert not used, f"{name} assembles a run itself ({', '.join(sorted(used))}): call build_run"


def test_low_layers_never_import_high_ones() -> None:
    for name, tree in _sources().items():
        if name.split("/")[0] not in LOW_LAYERS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(HIGH_LAYERS), f"{name} imports {node.module}"
            elif isinstance(node, ast.Import):
                assert not any(alias.name.startswith(HIGH_LAYERS) for alias in node.names), name


def test_live_never_imports_the_command_line_or_the_server() -> None:
    for name, tree in _sources().items():
        if not name.startswith("live/"):
            continue
        for node in ast.walk(tree):
            modules = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            assert not any(module.startswith(("slimfuse.cli", "slimfuse.serve")) for module in modules), name

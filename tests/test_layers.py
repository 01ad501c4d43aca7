"""The code's shape: build_run is the only place a run is assembled, every layer imports only the layers below it,
no files import each other in a circle, and the command line loads only what the command it runs needs. Read from
the source itself, so a new second assembler, an upward import or a circle fails here."""
from __future__ import annotations

import ast
import subprocess
import sys
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
LAYERS = (
    ("errors", "options", "log", "metrics", "profiles", "samples", "atomic", "config_file"),
    ("media",), ("models",), ("memory",), ("config",), ("faces",), ("processors",), ("optimize",), ("pipeline",),
    ("api",), ("live", "batch"), ("serve",), ("bench",), ("cli",), ("__main__", "slimfuse"),
)
"""The package's layers, lowest first: a file imports files of its own layer or of lower ones (a top-level file
is its own layer; `slimfuse` is the package's __init__)."""
HEAVY = ("numpy", "cv2", "onnx", "onnxruntime", "av", "PIL", "slimfuse.bench", "slimfuse.optimize",
         "slimfuse.pipeline")
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


def _module(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(["slimfuse", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _imports() -> dict[str, set[str]]:
    """Each module of the package and the package modules it imports anywhere (at the top or in a function)."""
    trees = {_module(name): tree for name, tree in _sources().items()}
    found: dict[str, set[str]] = {}
    for name, tree in trees.items():
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("slimfuse"):
                for alias in node.names:
                    inner = f"{node.module}.{alias.name}"
                    targets.add(inner if inner in trees else node.module)
            elif isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name.startswith("slimfuse")}
        found[name] = {target for target in targets if target in trees and target != name}
    return found


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else module
    return next(rank for rank, names in enumerate(LAYERS) if part in names)


def test_every_file_imports_only_its_own_layer_and_lower_ones() -> None:
    for module, targets in _imports().items():
        for target in targets:
            assert _layer(target) <= _layer(module), f"{module} imports {target}, a higher layer"


def test_no_files_import_each_other_in_a_circle() -> None:
    graph = _imports()
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError("import circle: " + " -> ".join([*path[path.index(module):], module]))
        if module in done:
            return
        for target in sorted(graph[module]):
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_the_command_line_loads_only_the_command_it_runs() -> None:
    """`slimfuse --help`, `slimfuse swap --help`, a usage error and the output check before any work read only the
    option table: no numpy, ONNX Runtime or PyAV, no benchmark and no PyTorch lab."""
    script = (
        "import sys\n"
        "from slimfuse.cli.main import build_parser\n"
        "from slimfuse.cli.options import config_from_args\n"
        "from slimfuse.media.destination import check_output\n"
        "build_parser(['--help'])\n"
        "args = build_parser(['swap']).parse_args(['swap', '-s', 'a.jpg', '-t', 'b.mp4', '-o', 'c.mp4'])\n"
        "config_from_args(args)\n"
        "check_output(args.output, args.target[0], ())\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            cwd=PACKAGE.parent).stdout.split()
    assert "slimfuse.config" in loaded and "slimfuse.cli.swap" in loaded
    assert [name for name in loaded if name.split(".")[0] in HEAVY or name.startswith(HEAVY)] == []
    assert not any(name.startswith("slimfuse.cli.") and name.split(".")[2] in ("bench", "doctor", "serve", "models")
                   for name in loaded)
